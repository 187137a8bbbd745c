//! The kernel's system-call table (kernel/src/linux/table.rs) must route every call this
//! forwarder performs to it, and only those: read the table's text and compare.

use std::collections::BTreeSet;

use super::HANDLED;

#[path = "../../../kernel/src/linux/names.rs"]
#[allow(dead_code)]
mod names;

const TABLE: &str = include_str!("../../../kernel/src/linux/table.rs");

/// (number, name given, route letter) of each `__NR_x => ("x", n, R...)` line of the table.
fn table_entries() -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    for line in TABLE.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("__NR_") else { continue };
        let Some((constant, entry)) = rest.split_once(" => (") else { continue };
        let fields: Vec<&str> = entry.trim_end_matches("),").splitn(3, ", ").collect();
        assert_eq!(fields.len(), 3, "unexpected table line: {line}");
        let nr = names::NAMES
            .iter()
            .position(|n| *n == constant)
            .unwrap_or_else(|| panic!("__NR_{constant} is not an x86-64 system call"));
        let route = fields[2].split('(').next().unwrap_or("").to_string();
        out.push((nr as u64, fields[0].trim_matches('"').to_string(), route));
    }
    out
}

#[test]
fn every_call_the_forwarder_performs_is_routed_to_it() {
    let entries = table_entries();
    assert!(entries.len() > 100, "the table was not parsed: {} entries", entries.len());
    for (nr, name, _) in &entries {
        assert_eq!(name, names::name(*nr), "the table names call {nr} differently");
    }
    let mut routed: BTreeSet<u64> = entries.iter().filter(|e| e.2 == "F").map(|e| e.0).collect();
    for &nr in super::FORWARDED_BY_KERNEL_HANDLERS {
        let entry = entries.iter().find(|e| e.0 == nr as u64);
        assert!(entry.is_some_and(|e| e.2 == "L"), "{} is not routed to a kernel handler", names::name(nr as u64));
        routed.insert(nr as u64);
    }
    let handled: BTreeSet<u64> = HANDLED.iter().map(|&n| n as u64).collect();
    let named = |set: BTreeSet<&u64>| set.into_iter().map(|&n| names::name(n)).collect::<Vec<_>>();
    assert!(
        routed == handled,
        "the forwarder performs but the kernel does not forward: {:?}; the kernel forwards but the \
         forwarder does not perform: {:?}",
        named(handled.difference(&routed).collect()),
        named(routed.difference(&handled).collect())
    );
}
