//! Frameless entry points for lock words (bit 0 held, bit 1 sleepers, bits 2-31 a count of
//! unlocks; `omp::lock`): the OpenMP
//! runtime's `critical`, `atomic` fallback and `omp_set_lock`/`omp_unset_lock`, which a program
//! calls once per construct. The kernel keeps frame pointers (backtraces), so a Rust function
//! wraps the one `lock cmpxchg` of a free word in a push, mov and pop: 27.1-28.1 TSC cycles per
//! lock/unlock pair against libgomp's 25.6-26.1 natively (one thread, 10 M pairs). These do the
//! free and the no-sleeper cases in assembly and jump to the caller's Rust function, which
//! takes the word in rdi, for the rest.

/// Defines `$vis extern "C" fn $name` running `$code` (which may jump to `{slow}`) on a lock
/// word: the fixed word `$word` (a static whose first field is the `AtomicU32`, loaded into
/// rdi first), or the word its first argument points to (already in rdi).
macro_rules! word_entry {
    ($(#[$m:meta])* $vis:vis fn $name:ident, word = $word:path, slow = $slow:path, $($code:literal),+) => {
        $(#[$m])*
        #[unsafe(naked)]
        $vis extern "C" fn $name() {
            core::arch::naked_asm!("lea rdi, [rip + {word}]", $($code),+, word = sym $word, slow = sym $slow)
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident(word_at), slow = $slow:path, $($code:literal),+) => {
        $(#[$m])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name(_w: *mut u8) {
            core::arch::naked_asm!($($code),+, slow = sym $slow)
        }
    };
}

/// A lock entry point (`word_entry`'s two forms, `contended = f` for its slow path): a free
/// word is taken with one `lock bts` of its held bit; otherwise it jumps to `f(w)`.
macro_rules! lock_word_entry {
    ($(#[$m:meta])* $vis:vis fn $name:ident $(($at:ident))? $(, word = $word:path)?, contended = $slow:path) => {
        $crate::arch::word_lock::word_entry!(
            $(#[$m])* $vis fn $name $(($at))? $(, word = $word)?, slow = $slow,
            "lock bts dword ptr [rdi], 0", "jc {slow}", "ret"
        );
    };
}

/// An unlock entry point (`wake = f`): one `lock xadd` of 3 clears the held bit and counts the
/// unlock (bit 2 up); unless the word was just held (a sleeper may wait, or it was not held),
/// it jumps to `f(w, old word)`.
macro_rules! unlock_word_entry {
    ($(#[$m:meta])* $vis:vis fn $name:ident $(($at:ident))? $(, word = $word:path)?, wake = $wake:path) => {
        $crate::arch::word_lock::word_entry!(
            $(#[$m])* $vis fn $name $(($at))? $(, word = $word)?, slow = $wake,
            "mov eax, 3",
            "lock xadd dword ptr [rdi], eax",
            "mov esi, eax",
            "xor eax, 1",
            "test eax, 3",
            "jnz {slow}",
            "ret"
        );
    };
}

pub(crate) use {lock_word_entry, unlock_word_entry, word_entry};
