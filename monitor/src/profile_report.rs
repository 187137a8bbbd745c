//! `hrt run --profile`: names the functions the kernel's samples landed in (the program's from
//! its symbol table, the kernel's from its own image) and prints the busiest ones.

use std::collections::HashMap;

use goblin::elf::Elf;

/// How many functions the report lists.
const SHOWN: usize = 30;

/// A sample that stands for a tick that found a vCPU halted (not interrupted).
pub const HALTED: u64 = u64::MAX;

/// Function symbols of one ELF image, sorted by address, relocated by `base`.
pub struct Symbols {
    funcs: Vec<(u64, u64, String)>,
    /// The span its loadable segments cover (relocated).
    span: (u64, u64),
    /// Where its link address 0 landed.
    base: u64,
}

impl Symbols {
    /// The functions of `image` (its `.symtab`, or its dynamic symbols if stripped) at `base`.
    pub fn of(image: &[u8], base: u64) -> Symbols {
        let Ok(elf) = Elf::parse(image) else { return Symbols { funcs: Vec::new(), span: (0, 0), base } };
        let loads = elf.program_headers.iter().filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD);
        let span = loads.fold((u64::MAX, 0), |(lo, hi), p| (lo.min(p.p_vaddr), hi.max(p.p_vaddr + p.p_memsz)));
        let mut funcs = Vec::new();
        for (syms, names) in [(&elf.syms, &elf.strtab), (&elf.dynsyms, &elf.dynstrtab)] {
            // Functions, and the labels of hand-written assembly (no type) in code.
            let code = |shndx: usize| {
                elf.section_headers
                    .get(shndx)
                    .is_some_and(|h| h.sh_flags & u64::from(goblin::elf::section_header::SHF_EXECINSTR) != 0)
            };
            let wanted = |s: &goblin::elf::Sym| {
                s.st_value != 0
                    && (s.is_function()
                        || s.st_type() == goblin::elf::sym::STT_NOTYPE && s.st_name != 0 && code(s.st_shndx))
            };
            for s in syms.iter().filter(wanted) {
                if let Some(name) = names.get_at(s.st_name).filter(|n| !n.starts_with(".L") && !n.starts_with('$')) {
                    funcs.push((base.wrapping_add(s.st_value), s.st_size, demangle(name)));
                }
            }
            if !funcs.is_empty() {
                break;
            }
        }
        funcs.sort_by_key(|f| f.0);
        funcs.dedup_by_key(|f| f.0);
        Symbols { funcs, span: (base.saturating_add(span.0), base.saturating_add(span.1)), base }
    }

    /// The functions of a file of which `[start, start + len)` maps file offset `off` (ld.so
    /// mapping a library's segment), covering only that range.
    pub fn of_mapping(image: &[u8], start: u64, len: u64, off: u64) -> Symbols {
        let Ok(elf) = Elf::parse(image) else { return Symbols { funcs: Vec::new(), span: (0, 0), base: 0 } };
        // The segment holding the offset says where the file's link address 0 landed.
        let seg = elf.program_headers.iter().find(|p| {
            p.p_type == goblin::elf::program_header::PT_LOAD
                && (p.p_offset..p.p_offset + p.p_filesz.max(1)).contains(&off)
        });
        let Some(base) = seg.map(|p| start.wrapping_sub(p.p_vaddr.wrapping_add(off - p.p_offset))) else {
            return Symbols { funcs: Vec::new(), span: (start, start.saturating_add(len)), base: 0 };
        };
        Symbols { span: (start, start.saturating_add(len)), ..Symbols::of(image, base) }
    }

    /// The function holding `addr`, if the image has one there.
    pub fn name(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.partition_point(|f| f.0 <= addr).checked_sub(1)?;
        let (start, size, name) = &self.funcs[i];
        // A symbol without a size (hand-written assembly) runs to the next one.
        let end = if *size > 0 { start + size } else { self.funcs.get(i + 1).map_or(u64::MAX, |f| f.0) };
        (addr < end).then_some(name.as_str())
    }

    fn covers(&self, addr: u64) -> bool {
        (self.span.0..self.span.1).contains(&addr)
    }
}

/// An image whose symbols name samples: the program (no label: its functions are named
/// plainly), the kernel, ld.so, a shared library (each by its label).
pub struct Image {
    pub label: String,
    pub symbols: Symbols,
}

impl Image {
    /// What a sample at `addr` is counted as, if the image covers it: its function, or where
    /// no symbol covers it, the address in the file's own terms (its link address, which
    /// `objdump` and `addr2line` on the file understand).
    fn key(&self, addr: u64) -> Option<String> {
        if !self.symbols.covers(addr) {
            return None;
        }
        let linked = addr.wrapping_sub(self.symbols.base);
        Some(match (self.symbols.name(addr), self.label.is_empty()) {
            (Some(name), true) => name.to_string(),
            (Some(name), false) => format!("[{}] {name}", self.label),
            (None, true) => format!("[program] {linked:#x}"),
            (None, false) => format!("[{}] {linked:#x}", self.label),
        })
    }
}

/// The report's lines: the samples per function, busiest first, each named by the first of
/// `images` that covers it (`vdso`: the vDSO's range).
pub fn report(samples: &[u64], dropped: u64, hz: u32, cpus: u32, images: &[Image], vdso: (u64, u64)) -> Vec<String> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for &addr in samples {
        let key = images.iter().find_map(|i| i.key(addr)).unwrap_or_else(|| {
            if addr == HALTED {
                "[halted: an idle vCPU asleep in HLT, not interrupted]".to_string()
            } else if (vdso.0..vdso.1).contains(&addr) {
                "[vdso]".to_string()
            } else {
                "[elsewhere: memory no file was mapped from]".to_string()
            }
        });
        *counts.entry(key).or_default() += 1;
    }
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total = samples.len() as u64;
    let share = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
    let mut lines = vec![format!(
        "hrt: profile: {total} samples at {hz} Hz on {cpus} vCPU(s){}; the busiest functions:",
        if dropped > 0 { format!(" ({dropped} more dropped: a vCPU's buffer was full)") } else { String::new() }
    )];
    for (name, n) in rows.iter().take(SHOWN) {
        lines.push(format!("hrt: {:>6.2}% {n:>8}  {name}", share(*n)));
    }
    if rows.len() > SHOWN {
        let rest: u64 = rows[SHOWN..].iter().map(|r| r.1).sum();
        lines.push(format!("hrt: {:>6.2}% {rest:>8}  ({} other functions)", share(rest), rows.len() - SHOWN));
    }
    lines
}

/// A Rust symbol in the legacy mangling (`_ZN` length-prefixed parts `E`) as a path without its
/// hash; any other name as it is.
pub fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else { return name.to_string() };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&d| d > 0) {
        let Ok(len) = rest[..digits].parse::<usize>() else { break };
        let Some(part) = rest.get(digits..digits + len) else { break };
        parts.push(part);
        rest = &rest[digits + len..];
    }
    if rest != "E" || parts.is_empty() {
        return name.to_string();
    }
    if parts
        .last()
        .is_some_and(|p| p.len() == 17 && p.starts_with('h') && p[1..].chars().all(|c| c.is_ascii_hexdigit()))
    {
        parts.pop();
    }
    // A part that starts with an escape has a `_` before it.
    let parts: Vec<&str> = parts.iter().map(|p| if p.starts_with("_$") { &p[1..] } else { p }).collect();
    let mut path = parts.join("::");
    for (escape, c) in ESCAPES {
        path = path.replace(escape, c);
    }
    path.replace("..", "::")
}

const ESCAPES: [(&str, &str); 15] = [
    ("$LT$", "<"),
    ("$GT$", ">"),
    ("$C$", ","),
    ("$RF$", "&"),
    ("$BP$", "*"),
    ("$SP$", "@"),
    ("$LP$", "("),
    ("$RP$", ")"),
    ("$u20$", " "),
    ("$u27$", "'"),
    ("$u5b$", "["),
    ("$u5d$", "]"),
    ("$u7b$", "{"),
    ("$u7d$", "}"),
    ("$u7e$", "~"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_legacy_names_lose_their_hash() {
        assert_eq!(demangle("_ZN10hrt_kernel3omp5tasks5defer17h1c91fbbf5478c90aE"), "hrt_kernel::omp::tasks::defer");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_ZN3foo"), "_ZN3foo");
        assert_eq!(
            demangle("_ZN5alloc4sync12Arc$LT$T$GT$9drop_slow17h0123456789abcdefE"),
            "alloc::sync::Arc<T>::drop_slow"
        );
        assert_eq!(
            demangle("_ZN86_$LT$hrt_kernel..mem..heap..KernelHeap$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17h0123456789abcdefE"),
            "<hrt_kernel::mem::heap::KernelHeap as core::alloc::global::GlobalAlloc>::alloc"
        );
        assert_eq!(
            demangle("_ZN3foo3Bar10help_until28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE"),
            "foo::Bar::help_until::{{closure}}"
        );
    }

    #[test]
    fn samples_are_counted_by_function_busiest_first() {
        let program = Symbols {
            funcs: vec![(0x1000, 0x100, "spin".into()), (0x1100, 0x10, "other".into())],
            span: (0x1000, 0x2000),
            base: 0,
        };
        let kernel =
            Symbols { funcs: vec![(0x10_0000, 0, "hrt_kernel::idle".into())], span: (0x10_0000, 0x20_0000), base: 0 };
        let lib = Symbols {
            funcs: vec![(0x7000_0100, 0x40, "memcpy".into())],
            span: (0x7000_0000, 0x7000_1000),
            base: 0x7000_0000,
        };
        let images = [
            Image { label: "kernel".into(), symbols: kernel },
            Image { label: String::new(), symbols: program },
            Image { label: "libc.so.6".into(), symbols: lib },
        ];
        let samples =
            [0x1010, 0x1020, 0x10ff, 0x1105, 0x10_0040, 0x1800, 0x7000_0120, 0x7000_0800, 0x9000, 0x7f00_0000];
        let lines = report(&samples, 0, 1000, 1, &images, (0x9000, 0xa000));
        assert!(lines[0].contains("10 samples at 1000 Hz on 1 vCPU(s)"), "{lines:?}");
        assert!(lines[1].ends_with("3  spin"), "{lines:?}");
        assert_eq!(lines.len(), 9, "{lines:?}");
        for want in [
            "[kernel] hrt_kernel::idle",
            "[program] 0x1800",
            "[libc.so.6] memcpy",
            "[libc.so.6] 0x800",
            "[vdso]",
            "[elsewhere",
        ] {
            assert!(lines.iter().any(|l| l.contains(want)), "{want}: {lines:?}");
        }
    }
}
