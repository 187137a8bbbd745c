//! The program's functions as the override planner needs them: name, address, size, and
//! whether each belongs to the library a group replaces.

use goblin::elf::{program_header::PT_INTERP, sym};
use hrt_abi::overrides::Group;

pub struct Function {
    pub name: String,
    pub addr: u64,
    pub size: u64,
    /// Part of the library (by name prefix, or a local function of one of its objects).
    pub in_library: bool,
    /// A local symbol (`STB_LOCAL`), e.g. the compiler's `.part.0` clone of a function: only
    /// its own object file's code can name it.
    pub local: bool,
}

pub struct Table<'a> {
    pub bytes: &'a [u8],
    pub functions: Vec<Function>,
    /// (virtual address, file offset, file size) of each executable PT_LOAD segment.
    pub code: Vec<(u64, u64, u64)>,
    /// Position-independent (ET_DYN): its code cannot hold a function's absolute address.
    pub pie: bool,
    /// The library is linked in: a symbol (of any kind) named with one of the group's
    /// `internal_prefixes`.
    pub library_linked: bool,
    by_name: std::collections::HashMap<String, usize>,
}

impl<'a> Table<'a> {
    pub fn read(bytes: &'a [u8], group: &Group) -> Result<Table<'a>, String> {
        let elf =
            crate::elf_headers::parse_bounded(bytes).map_err(|e| format!("cannot read the program's ELF: {e}"))?;
        if elf.program_headers.iter().any(|p| p.p_type == PT_INTERP) {
            return Err("the program is dynamically linked (its libgomp is a shared library)".into());
        }
        if elf.syms.is_empty() {
            return Err("the program is stripped (no symbol table to find its functions)".into());
        }
        let mut functions = Vec::new();
        let mut by_name = std::collections::HashMap::new();
        let mut object_in_library = false;
        let mut library_linked = false;
        for s in elf.syms.iter() {
            let name = elf.strtab.get_at(s.st_name).unwrap_or("");
            library_linked |= s.st_value != 0 && group.internal_prefixes.iter().any(|p| name.starts_with(p));
            if s.st_type() == sym::STT_FILE {
                object_in_library = group.library_objects.contains(&name);
                continue;
            }
            if s.st_type() != sym::STT_FUNC && s.st_type() != sym::STT_GNU_IFUNC || s.st_value == 0 {
                continue;
            }
            let local = s.st_bind() == sym::STB_LOCAL;
            let in_library = group.library_prefixes.iter().any(|p| name.starts_with(p)) || (local && object_in_library);
            if !local {
                by_name.insert(name.to_string(), functions.len());
            }
            functions.push(Function { name: name.to_string(), addr: s.st_value, size: s.st_size, in_library, local });
        }
        let code = elf
            .program_headers
            .iter()
            .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable())
            .map(|p| (p.p_vaddr, p.p_offset, p.p_filesz))
            .collect();
        let pie = elf.header.e_type == goblin::elf::header::ET_DYN;
        Ok(Table { bytes, functions, code, pie, library_linked, by_name })
    }

    /// The global function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.by_name.get(name).map(|&i| &self.functions[i])
    }

    /// The global function named `name`, else the only local one (a static-PIE program's C
    /// library keeps some of its functions local, e.g. `exit`).
    pub fn global_or_only_local(&self, name: &str) -> Option<&Function> {
        self.function(name).or_else(|| {
            let mut named = self.functions.iter().filter(|f| f.local && f.name == name);
            let first = named.next()?;
            named.next().is_none().then_some(first)
        })
    }

    /// The bytes of function `f` in the file, if they lie in an executable segment.
    pub fn code_of(&self, f: &Function) -> Option<&'a [u8]> {
        let &(vaddr, offset, _) = self.code.iter().find(|&&(v, _, n)| f.addr >= v && f.addr + f.size <= v + n)?;
        let start = (offset + (f.addr - vaddr)) as usize;
        self.bytes.get(start..start + f.size as usize)
    }
}
