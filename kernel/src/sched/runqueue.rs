//! An intrusive FIFO of threads, linked through `Thread::next`. No allocation on the hot path.

use core::ptr::null_mut;

use super::thread::Thread;

pub struct RunQueue {
    head: *mut Thread,
    tail: *mut Thread,
    len: usize,
}

// SAFETY: the queue is always used under a lock; the threads it links are heap objects.
unsafe impl Send for RunQueue {}

impl RunQueue {
    pub const fn new() -> Self {
        RunQueue { head: null_mut(), tail: null_mut(), len: 0 }
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

    pub fn pop(&mut self) -> Option<*mut Thread> {
        let t = self.head;
        if t.is_null() {
            return None;
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

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
