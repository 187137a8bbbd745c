//! `translate` on a VM that is this test process: its "guest RAM" and page maps are vectors
//! here, named by a directory as another `hrt` would publish them, and the page maps are read
//! with the host's process_vm_readv on this process, as from another one.

use super::super::io::GuestIovec;
use super::{translate, Directory, PageMaps, Range};

const PAGE: u64 = 4096;
/// The guest address of the pool's first page (page 0 of the maps).
const BASE: u64 = 0x10_0000;
const PAGES: u64 = 16;

/// Guest RAM of PAGES pages and the three bitmaps (one byte per 8 pages), kept alive while the
/// directory names them.
struct FakeVm {
    ram: Vec<u8>,
    mapped: Vec<u8>,
    read_only: Vec<u8>,
    unreadable: Vec<u8>,
}

impl FakeVm {
    /// Pages 0-7 mapped, page 3 read-only, page 5 execute-only; 8-15 not mapped but 10.
    fn new() -> FakeVm {
        let bytes = (PAGES / 8) as usize;
        let mut vm = FakeVm {
            ram: vec![0; (PAGES * PAGE) as usize],
            mapped: vec![0; bytes],
            read_only: vec![0; bytes],
            unreadable: vec![0; bytes],
        };
        vm.mapped[0] = 0xff;
        vm.mapped[1] = 1 << 2;
        vm.read_only[0] = 1 << 3;
        vm.unreadable[0] = 1 << 5;
        vm
    }

    fn directory(&self) -> Directory {
        let mut dir = Directory { count: 1, ..Directory::default() };
        dir.ranges[0] = Range { guest: BASE, len: PAGES * PAGE, host: self.ram.as_ptr() as u64 };
        dir.maps = PageMaps {
            mapped: self.mapped.as_ptr() as u64,
            read_only: self.read_only.as_ptr() as u64,
            unreadable: self.unreadable.as_ptr() as u64,
            base: BASE,
            pages: PAGES,
        };
        dir
    }

    /// `translate`'s answer as (guest address, length) pairs, or the errno.
    fn translate(&self, remote: &[(u64, u64)], wanted: u64, write: bool) -> Result<Vec<(u64, u64)>, i32> {
        let remote: Vec<GuestIovec> = remote.iter().map(|&(base, len)| GuestIovec { base, len }).collect();
        let host = self.ram.as_ptr() as u64;
        let pid = std::process::id() as i32;
        match translate(pid, &self.directory(), &remote, wanted, write) {
            Ok(v) => Ok(v.iter().map(|v| (v.iov_base as u64 - host + BASE, v.iov_len as u64)).collect()),
            Err(e) => Err(e.0),
        }
    }
}

fn page(n: u64) -> u64 {
    BASE + n * PAGE
}

#[test]
fn mapped_pages_go_through_whole() {
    let vm = FakeVm::new();
    assert_eq!(
        vm.translate(&[(page(0), 3 * PAGE), (page(6), PAGE)], 4 * PAGE, false),
        Ok(vec![(page(0), 3 * PAGE), (page(6), PAGE)])
    );
}

#[test]
fn the_copy_stops_at_the_first_unmapped_page() {
    let vm = FakeVm::new();
    // From the middle of page 6 into page 8 (not mapped): the rest of 6 and page 7.
    let start = page(6) + 100;
    assert_eq!(vm.translate(&[(start, 3 * PAGE), (page(0), 10)], 8 * PAGE, false), Ok(vec![(start, 2 * PAGE - 100)]));
    // Nothing before the fault: EFAULT, even with mapped iovecs after it.
    assert_eq!(vm.translate(&[(page(9), 10), (page(0), 10)], PAGE, false), Err(libc::EFAULT));
    // A page past the pool, and one in it mapped after unmapped ones (10): still the fault.
    assert_eq!(vm.translate(&[(page(PAGES), 10)], PAGE, false), Err(libc::EFAULT));
    assert_eq!(vm.translate(&[(page(8), 3 * PAGE)], 3 * PAGE, false), Err(libc::EFAULT));
    assert_eq!(vm.translate(&[(page(10), 10)], PAGE, false), Ok(vec![(page(10), 10)]));
}

#[test]
fn empty_iovecs_are_skipped_and_the_local_size_bounds_the_check() {
    let vm = FakeVm::new();
    assert_eq!(vm.translate(&[(page(9), 0), (page(0), 10)], PAGE, false), Ok(vec![(page(0), 10)]));
    // The local side holds 10 bytes: the unmapped iovec after them is never reached.
    assert_eq!(vm.translate(&[(page(0), 10), (page(9), 10)], 10, false), Ok(vec![(page(0), 10)]));
    // ... and of a long iovec only the part it takes is checked.
    assert_eq!(vm.translate(&[(page(7), 2 * PAGE)], 100, false), Ok(vec![(page(7), 100)]));
}

#[test]
fn writes_stop_at_read_only_pages_and_reads_at_unreadable_ones() {
    let vm = FakeVm::new();
    assert_eq!(vm.translate(&[(page(2), 2 * PAGE)], 2 * PAGE, true), Ok(vec![(page(2), PAGE)]));
    assert_eq!(vm.translate(&[(page(3), 10)], PAGE, true), Err(libc::EFAULT));
    assert_eq!(vm.translate(&[(page(3), 10)], PAGE, false), Ok(vec![(page(3), 10)]));
    assert_eq!(vm.translate(&[(page(4), 2 * PAGE)], 2 * PAGE, false), Ok(vec![(page(4), PAGE)]));
    assert_eq!(vm.translate(&[(page(5), 10)], PAGE, false), Err(libc::EFAULT));
    assert_eq!(vm.translate(&[(page(5), 10)], PAGE, true), Ok(vec![(page(5), 10)]));
}

#[test]
fn page_maps_that_cannot_be_read_count_as_nothing_mapped() {
    let vm = FakeVm::new();
    let mut dir = vm.directory();
    dir.maps.mapped = 16; // not an address of this process
    let remote = [GuestIovec { base: page(0), len: 10 }];
    let got = translate(std::process::id() as i32, &dir, &remote, PAGE, false);
    assert_eq!(got.map(|v| v.len()).map_err(|e| e.0), Err(libc::EFAULT));
    dir = vm.directory();
    dir.maps.pages = 0; // the kernel has not sent its maps
    let got = translate(std::process::id() as i32, &dir, &remote, PAGE, false);
    assert_eq!(got.map(|v| v.len()).map_err(|e| e.0), Err(libc::EFAULT));
}
