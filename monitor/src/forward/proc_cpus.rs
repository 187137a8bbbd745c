//! The /proc files that list CPUs, made to list the VM's vCPUs from the host's text:
//! `/proc/cpuinfo` (one block per vCPU) and `/proc/stat` (one `cpu<K>` line per vCPU).

/// `/proc/cpuinfo` of a VM of `cpus` vCPUs: the host's first block once per vCPU, with the
/// fields that name the CPU and its place in the topology (synthetic.rs: every vCPU a core of
/// one socket, its APIC ID its index as the kernel numbers them) set for that vCPU. The rest
/// (model, flags, frequency, caches) is the host's first CPU's, which the vCPUs run on.
pub fn cpuinfo(host: &[u8], cpus: u32) -> Vec<u8> {
    let first: Vec<&[u8]> = host.split(|&b| b == b'\n').take_while(|l| !l.is_empty()).collect();
    let mut out = Vec::new();
    for cpu in 0..cpus {
        for line in &first {
            // "name\t\t: value": the name is what comes before the colon, tabs trimmed.
            let colon = line.iter().position(|&b| b == b':');
            let name = colon.map(|c| line[..c].trim_ascii_end());
            let value = match name {
                Some(b"processor" | b"core id" | b"apicid" | b"initial apicid") => Some(cpu),
                Some(b"physical id") => Some(0),
                Some(b"siblings" | b"cpu cores") => Some(cpus),
                _ => None,
            };
            match (colon, value) {
                (Some(c), Some(v)) => {
                    out.extend_from_slice(&line[..=c]);
                    out.extend_from_slice(format!(" {v}").as_bytes());
                }
                _ => out.extend_from_slice(line),
            }
            out.push(b'\n');
        }
        out.push(b'\n');
    }
    out
}

/// `/proc/stat` of a VM of `cpus` vCPUs: the host's `cpu<K>` lines for the vCPUs it has, a
/// line of zeros (no time recorded) for each it lacks, and the `cpu` total line their sum; the
/// other lines (interrupts, context switches, boot time, processes) are the host's.
pub fn stat(host: &[u8], cpus: u32) -> Vec<u8> {
    let lines: Vec<&[u8]> = host.split_inclusive(|&b| b == b'\n').collect();
    let per_cpu = |line: &[u8]| -> Option<u32> {
        let name = line.split(|&b| b == b' ').next()?;
        std::str::from_utf8(name.strip_prefix(b"cpu")?).ok()?.parse().ok()
    };
    let fields = |line: &[u8]| -> Vec<u64> {
        line.split(|b| b.is_ascii_whitespace())
            .skip(1)
            .filter_map(|f| std::str::from_utf8(f).ok()?.parse().ok())
            .collect()
    };
    let width = lines.iter().find(|l| per_cpu(l) == Some(0)).map_or(10, |l| fields(l).len());
    let vcpus: Vec<Vec<u64>> = (0..cpus)
        .map(|k| lines.iter().find(|l| per_cpu(l) == Some(k)).map_or_else(|| vec![0; width], |l| fields(l)))
        .collect();
    let text = |name: String, values: &[u64]| -> Vec<u8> {
        let mut s = name;
        for v in values {
            s.push_str(&format!(" {v}"));
        }
        s.push('\n');
        s.into_bytes()
    };
    let mut out = Vec::new();
    for line in lines {
        if line.starts_with(b"cpu ") {
            let total = (0..width).map(|i| vcpus.iter().filter_map(|c| c.get(i)).sum()).collect::<Vec<u64>>();
            // Linux puts two spaces after "cpu" (the names line up).
            out.extend(text("cpu ".to_string(), &total));
            for (k, c) in vcpus.iter().enumerate() {
                out.extend(text(format!("cpu{k}"), c));
            }
        } else if per_cpu(line).is_none() {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{cpuinfo, stat};

    const HOST: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nphysical id\t: 0\n\
        siblings\t: 2\ncore id\t\t: 0\ncpu cores\t: 2\napicid\t\t: 0\ninitial apicid\t: 0\nflags\t\t: fpu sse\n\n\
        processor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nphysical id\t: 0\n\
        siblings\t: 2\ncore id\t\t: 1\ncpu cores\t: 2\napicid\t\t: 1\ninitial apicid\t: 1\nflags\t\t: fpu sse\n\n";

    #[test]
    fn cpuinfo_has_a_block_per_vcpu() {
        let text = String::from_utf8(cpuinfo(HOST.as_bytes(), 3)).unwrap();
        let blocks: Vec<&str> = text.split_terminator("\n\n").collect();
        assert_eq!(blocks.len(), 3);
        assert_eq!(
            blocks[2],
            "processor\t: 2\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nphysical id\t: 0\nsiblings\t: 3\n\
             core id\t\t: 2\ncpu cores\t: 3\napicid\t\t: 2\ninitial apicid\t: 2\nflags\t\t: fpu sse"
        );
        assert!(text.ends_with("fpu sse\n\n"));
        assert_eq!(
            cpuinfo(HOST.as_bytes(), 1),
            HOST.split("\n\n")
                .next()
                .map(|b| format!("{b}\n\n"))
                .unwrap()
                .replace("siblings\t: 2", "siblings\t: 1")
                .replace("cores\t: 2", "cores\t: 1")
                .into_bytes()
        );
    }

    #[test]
    fn stat_has_a_line_per_vcpu() {
        let host = b"cpu  9 9 9\ncpu0 1 2 3\ncpu1 4 5 6\nintr 7 0\nctxt 8\n";
        assert_eq!(stat(host, 1), b"cpu  1 2 3\ncpu0 1 2 3\nintr 7 0\nctxt 8\n");
        assert_eq!(stat(host, 3), b"cpu  5 7 9\ncpu0 1 2 3\ncpu1 4 5 6\ncpu2 0 0 0\nintr 7 0\nctxt 8\n");
    }
}
