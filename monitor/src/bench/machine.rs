//! Where the benchmarks ran: host, CPU, memory, kernel, compiler, platform, and the date.

pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    pub host_cpus: usize,
    pub mem_mib: u64,
    pub kernel: String,
    pub gcc: String,
    pub platform: String,
    pub kvm_module: String,
    pub tsc_mhz: Option<f64>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default().trim().to_string()
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim())
}

pub fn describe() -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let mem_kib: u64 =
        field(&meminfo, "MemTotal").and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap_or(0);
    let gcc = std::process::Command::new("gcc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_else(|| "not found".into());
    let tsc_mhz = crate::vm::open_kvm().ok().and_then(|k| crate::vm::probe_tsc_khz(&k)).map(|k| k as f64 / 1000.0);
    Machine {
        hostname: read("/proc/sys/kernel/hostname"),
        cpu_model: field(&cpuinfo, "model name").unwrap_or("unknown").to_string(),
        host_cpus: crate::host_cpus::count() as usize,
        mem_mib: mem_kib / 1024,
        kernel: format!("Linux {}", read("/proc/sys/kernel/osrelease")),
        gcc,
        platform: crate::platform::detect().describe().to_string(),
        kvm_module: crate::platform::kvm_module().to_string(),
        tsc_mhz,
    }
}

/// Today's date and time in UTC, `YYYY-MM-DD HH:MM:SS UTC` (no time-zone database needed).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}
