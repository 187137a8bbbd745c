//! The program's process title as other processes see it. Servers rename their processes by
//! writing over their argument strings (setproctitle: postgres's `postgres: checkpointer`,
//! nginx's `nginx: worker process`), and Linux's `/proc/<pid>/cmdline` reads that memory as
//! it is at each read, so `ps` and `pgrep -f` see a new title at once. Under `hrt` the strings
//! are guest memory and the host's `/proc` shows `hrt`'s own argument area
//! (`crate::host_name`): before each forwarded call the monitor compares the program's
//! argument strings (and, once a title ran on past them, as much as Linux would show) with
//! what that thread saw last, and where they changed writes the program's `/proc/self/cmdline`
//! into its own area. So a new title shows on the host from the program's next forwarded call
//! on: a server that sets its title and then waits in `epoll_wait`, `accept` or `read` shows
//! it while it waits; one that computes without forwarded calls shows its older title
//! meanwhile. A title longer than `hrt`'s area (its own command line, `hrt run ... -- `
//! included) is cut. Each thread keeps its own copy (no line shared between vCPU threads
//! making calls at once); the look costs a copy of the strings, usually tens of bytes, at
//! most a page (`WATCHED`).

use std::cell::RefCell;

/// How much of a long command line is compared (with its last byte): a title or a password
/// wiped from the arguments (`mysql -pSECRET` does) changes the first page; a change only
/// further on in a long command line (a linker's thousands of objects) is not followed, which
/// would otherwise copy all of it before every forwarded call.
const WATCHED: usize = 4096;

/// What a thread saw last: where (the area `own_status::title_area` gave and its host address)
/// and the bytes; room for the next look.
#[derive(Default)]
struct Seen {
    area: (u64, u64, u64),
    host: u64,
    bytes: Vec<u8>,
    now: Vec<u8>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

/// Before a forwarded call: the host's view of the program's command line catches up with its
/// argument strings.
pub fn follow() {
    let line = SEEN.with(|seen| changed(&mut seen.borrow_mut()));
    // A stack being replaced (an exec's cleared image) shows no title: keep the last one.
    if let Some(line) = line.filter(|l| l.iter().any(|&b| b != 0)) {
        crate::host_name::set_cmdline_bytes(&line);
    }
}

/// The program's command line if its argument strings changed since this thread's last look.
fn changed(seen: &mut Seen) -> Option<Vec<u8>> {
    let area = super::own_status::title_area()?;
    let (start, end, limit) = area;
    if area != seen.area {
        seen.host = super::own_status::host_span(start, limit - start)?;
        seen.area = area;
    }
    // The last byte written over: the title may run on into the environment strings.
    let (host, args) = (seen.host, (end - start) as usize);
    // SAFETY: `host` is where guest RAM holds [start, limit), mapped for as long as guest RAM
    // lives (`host_span`); the guest may be writing these bytes, which are copied as they are.
    let last = unsafe { std::ptr::read_volatile((host as *const u8).add(args - 1)) };
    let len = if last != 0 { (limit - start) as usize } else { args.min(WATCHED) };
    seen.now.clear();
    seen.now.reserve(len + 1);
    // SAFETY: as above, `len` bytes of [start, limit); into `now`'s spare room of `len` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(host as *const u8, seen.now.as_mut_ptr(), len);
        seen.now.set_len(len);
    }
    seen.now.push(last);
    if seen.now == seen.bytes {
        return None;
    }
    std::mem::swap(&mut seen.bytes, &mut seen.now);
    super::own_status::cmdline()
}
