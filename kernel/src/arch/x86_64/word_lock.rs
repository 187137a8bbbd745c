//! Frameless entry points for lock words (0 free, 1 held, 2 held with sleepers): the OpenMP
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
/// word is taken with one `lock cmpxchg`; otherwise it jumps to `f(w)`.
macro_rules! lock_word_entry {
    ($(#[$m:meta])* $vis:vis fn $name:ident $(($at:ident))? $(, word = $word:path)?, contended = $slow:path) => {
        $crate::arch::word_lock::word_entry!(
            $(#[$m])* $vis fn $name $(($at))? $(, word = $word)?, slow = $slow,
            "mov ecx, 1", "xor eax, eax", "lock cmpxchg dword ptr [rdi], ecx", "jne {slow}", "ret"
        );
    };
}

/// An unlock entry point (`wake = f`): the word becomes 0 with one `xchg`; if it was 2 (a
/// sleeper), it jumps to `f(w)`.
macro_rules! unlock_word_entry {
    ($(#[$m:meta])* $vis:vis fn $name:ident $(($at:ident))? $(, word = $word:path)?, wake = $wake:path) => {
        $crate::arch::word_lock::word_entry!(
            $(#[$m])* $vis fn $name $(($at))? $(, word = $word)?, slow = $wake,
            "xor eax, eax", "xchg dword ptr [rdi], eax", "cmp eax, 2", "je {slow}", "ret"
        );
    };
}

pub(crate) use {lock_word_entry, unlock_word_entry, word_entry};
