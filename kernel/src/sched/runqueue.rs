//! An intrusive FIFO of threads, linked through `Thread::next`. No allocation on the hot path.
//! Threads woken from a wait form a FIFO of their own at the front (`push_woken`).

use core::ptr::null_mut;

use super::thread::Thread;

pub struct RunQueue {
    head: *mut Thread,
    tail: *mut Thread,
    /// The last of the threads queued by `push_woken` that have not run yet (they are the
    /// queue's first ones), or null.
    woken_tail: *mut Thread,
    len: usize,
}

// SAFETY: the queue is always used under a lock; the threads it links are heap objects.
unsafe impl Send for RunQueue {}

impl RunQueue {
    pub const fn new() -> Self {
        RunQueue { head: null_mut(), tail: null_mut(), woken_tail: null_mut(), len: 0 }
    }

    /// # Safety
    /// `t` must be a live thread linked in no queue (a thread is in at most one at a time).
    pub unsafe fn push(&mut self, t: *mut Thread) {
        // SAFETY: the caller's contract.
        unsafe { (*t).next = null_mut() };
        if self.tail.is_null() {
            self.head = t;
        } else {
            // SAFETY: tail is a live linked thread.
            unsafe { (*self.tail).next = t };
        }
        self.tail = t;
        self.len += 1;
    }

    /// Queues `t` ahead of the threads that were preempted or yielded, behind those woken
    /// before it, as Linux's scheduler lets a thread that waited run soon: a thread that ends a
    /// sleep or a wait among threads that compute or spin runs when the running one's quantum
    /// ends, not after every queued thread's quantum (16 spinners: 160 ms).
    ///
    /// # Safety
    /// As `push`.
    pub unsafe fn push_woken(&mut self, t: *mut Thread) {
        if self.woken_tail.is_null() {
            // SAFETY: the caller's contract.
            unsafe { (*t).next = self.head };
            self.head = t;
        } else {
            // SAFETY: the caller's contract; `woken_tail` is a live linked thread.
            unsafe {
                (*t).next = (*self.woken_tail).next;
                (*self.woken_tail).next = t;
            }
        }
        // SAFETY: as above.
        if unsafe { (*t).next }.is_null() {
            self.tail = t;
        }
        self.woken_tail = t;
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<*mut Thread> {
        let t = self.head;
        if t.is_null() {
            return None;
        }
        if self.woken_tail == t {
            self.woken_tail = null_mut();
        }
        // SAFETY: head is a live linked thread.
        self.head = unsafe { (*t).next };
        if self.head.is_null() {
            self.tail = null_mut();
        }
        self.len -= 1;
        Some(t)
    }

    /// Unlinks `t` if present (used by wait queues for timeouts and cancellation).
    /// Only compares `t` with the linked pointers, so any value is fine.
    pub fn remove(&mut self, t: *mut Thread) -> bool {
        let mut prev: *mut Thread = null_mut();
        let mut cur = self.head;
        while !cur.is_null() {
            if cur == t {
                // SAFETY: cur and prev are live linked threads.
                unsafe {
                    let next = (*cur).next;
                    if prev.is_null() {
                        self.head = next;
                    } else {
                        (*prev).next = next;
                    }
                    if self.tail == cur {
                        self.tail = prev;
                    }
                    // The woken threads are the queue's first: `prev` is one or null.
                    if self.woken_tail == cur {
                        self.woken_tail = prev;
                    }
                }
                self.len -= 1;
                return true;
            }
            prev = cur;
            // SAFETY: cur is a live linked thread.
            cur = unsafe { (*cur).next };
        }
        false
    }

    /// The first queued thread `pred` accepts.
    pub fn find(&self, pred: impl Fn(*mut Thread) -> bool) -> Option<*mut Thread> {
        let mut cur = self.head;
        while !cur.is_null() {
            if pred(cur) {
                return Some(cur);
            }
            // SAFETY: cur is a live linked thread.
            cur = unsafe { (*cur).next };
        }
        None
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
