//! The few ELF64 fields the loader needs. (Hand-read rather than through an ELF crate: the
//! monitor has already validated the file with goblin; here every instruction runs emulated on
//! PVM hosts, and four header fields plus the program headers are all that is used.)

pub const ET_EXEC: u16 = 2;
pub const ET_DYN: u16 = 3;
pub const PT_LOAD: u32 = 1;
pub const PT_TLS: u32 = 7;
pub const PT_PHDR: u32 = 6;
/// The stack's permissions: PF_X asks for an executable stack (gcc's nested-function trampolines).
pub const PT_GNU_STACK: u32 = 0x6474_e551;
// Segment permissions (p_flags).
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

#[derive(Clone, Copy, Debug)]
pub struct ProgramHeader {
    pub kind: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

pub struct Elf<'a> {
    pub bytes: &'a [u8],
    pub kind: u16,
    pub entry: u64,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

impl<'a> Elf<'a> {
    pub fn parse(bytes: &'a [u8]) -> Option<Elf<'a>> {
        if bytes.get(..4)? != b"\x7fELF" || bytes[4] != 2 {
            return None;
        }
        Some(Elf {
            bytes,
            kind: u16_at(bytes, 16)?,
            entry: u64_at(bytes, 24)?,
            phoff: u64_at(bytes, 32)?,
            phentsize: u16_at(bytes, 54)?,
            phnum: u16_at(bytes, 56)?,
        })
    }

    pub fn program_header(&self, i: usize) -> Option<ProgramHeader> {
        let off = self.phoff as usize + i * self.phentsize as usize;
        let b = self.bytes;
        Some(ProgramHeader {
            kind: u32_at(b, off)?,
            flags: u32_at(b, off + 4)?,
            offset: u64_at(b, off + 8)?,
            vaddr: u64_at(b, off + 16)?,
            filesz: u64_at(b, off + 32)?,
            memsz: u64_at(b, off + 40)?,
        })
    }

    pub fn program_headers(&self) -> impl Iterator<Item = ProgramHeader> + '_ {
        (0..self.phnum as usize).filter_map(|i| self.program_header(i))
    }

    /// The functions of the static symbol table (.symtab): `(link address, size)` of every
    /// STT_FUNC symbol with a size. Empty for a stripped file.
    pub fn functions(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        const SHT_SYMTAB: u32 = 2;
        const STT_FUNC: u8 = 2;
        const SYM_SIZE: usize = 24;
        let b = self.bytes;
        let shoff = u64_at(b, 0x28).unwrap_or(0) as usize;
        let shentsize = u16_at(b, 0x3a).unwrap_or(0) as usize;
        let shnum = u16_at(b, 0x3c).unwrap_or(0) as usize;
        let symtab = (0..shnum).map(move |i| shoff + i * shentsize).find_map(|sh| {
            (u32_at(b, sh + 4)? == SHT_SYMTAB).then_some(())?;
            let off = u64_at(b, sh + 0x18)? as usize;
            let size = u64_at(b, sh + 0x20)? as usize;
            b.get(off..off.checked_add(size)?)
        });
        symtab.unwrap_or(&[]).chunks_exact(SYM_SIZE).filter_map(|sym| {
            let value = u64_at(sym, 8)?;
            let size = u64_at(sym, 16)?;
            (sym[4] & 0xf == STT_FUNC && size != 0 && value != 0).then_some((value, size))
        })
    }
}
