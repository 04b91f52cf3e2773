"""Run native x86-64 functions (AVX-512 included) inside the Bochs CPU emulator.

    from emu import Machine
    m = Machine("libfoo.so")                 # ELF: shared object, PIE or fixed-address executable
    x = m.alloc(struct.pack("<16f", *range(16)))
    m.call("my_kernel", [x, 16])             # SysV AMD64, up to 6 integer/pointer args, returns rax
    out = m.read(x, 64)

The guest is a single CPU in 64-bit long mode at CPL 0 with paging on, SSE/AVX/AVX-512
state enabled (CR4.OSFXSR|OSXMMEXCPT|OSXSAVE, XCR0=0xE7, MXCSR=0x1F80). There is no OS:
no syscalls, no libc, no TLS (fs/gs base 0), no interrupts. Any CPU exception stops the
call and raises CpuException. See README.md next to this file.
"""

import ctypes
import os
import struct
import sys
from pathlib import Path

PAGE = 0x1000

# Guest virtual layout (all canonical lower-half addresses, none overlapping).
PIE_BASE = 0x0000_5550_0000_0000   # where ET_DYN objects (shared objects, PIE) are placed
HEAP_BASE = 0x0000_6000_0000_0000  # Machine.alloc() buffers, each followed by an unmapped page
STACK_TOP = 0x0000_7FF0_0000_0000
TRAP_BASE = 0x0000_7FFF_E000_0000  # never mapped: unresolved imports point here
SENTINEL = 0x0000_7FFF_F000_0000   # one page holding HLT; pushed as the return address

PTE_P, PTE_RW, PTE_NX = 1, 2, 1 << 63

VECTORS = {
    0: "#DE divide error", 1: "#DB debug", 3: "#BP breakpoint", 4: "#OF overflow",
    5: "#BR bound range", 6: "#UD invalid opcode", 7: "#NM device not available",
    8: "#DF double fault", 10: "#TS invalid TSS", 11: "#NP segment not present",
    12: "#SS stack fault", 13: "#GP general protection", 14: "#PF page fault",
    16: "#MF x87 FP error", 17: "#AC alignment check", 18: "#MC machine check",
    19: "#XM SIMD FP exception", 21: "#CP control protection",
}


def _load_bochscpu():
    # bochscpu-python 0.4.0's native module is linked against glibc >= 2.38
    # (__isoc23_strtoull, __isoc23_sscanf). On older glibc, setup.sh builds a small shim;
    # loading it RTLD_GLOBAL first lets the module resolve those two symbols.
    shim = os.environ.get("AVX512_EMU_SHIM") or str(Path(sys.prefix, "lib", "avx512-emu-shim.so"))
    if Path(shim).is_file():
        ctypes.CDLL(shim, mode=ctypes.RTLD_GLOBAL)
    import bochscpu
    import bochscpu.cpu
    import bochscpu.memory

    # The module's C++ static destructors crash at process exit (free() of a non-heap
    # pointer, or re-entering a finalized interpreter), and nanobind prints a few hundred
    # "leaked ..." lines while the interpreter is torn down. Neither affects results.
    # Workaround: once Python's own atexit work is done, send fd 2 to /dev/null, and have
    # glibc call _exit(status) before it reaches those destructors (on_exit handlers run
    # in reverse order of registration, and get exit()'s status as their first argument).
    import atexit
    libc = ctypes.CDLL(None)
    libc.on_exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    libc.on_exit(ctypes.cast(libc._exit, ctypes.c_void_p), None)

    def quiet_teardown():
        sys.stdout.flush()
        sys.stderr.flush()
        if not os.environ.get("AVX512_EMU_TEARDOWN_NOISE"):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    atexit.register(quiet_teardown)
    return bochscpu


bochscpu = _load_bochscpu()
_phys_next = 0x10_0000   # bump allocator for guest-physical pages (shared by all Machines)
_session = None          # bochscpu drives one global CPU; all Machines share it


class EmulationError(RuntimeError):
    pass


class CpuException(EmulationError):
    """The guest raised a CPU exception (#UD, #GP, #PF, ...)."""

    def __init__(self, message, vector, error_code, rip, insn_bytes, cr2=None):
        super().__init__(message)
        self.vector, self.error_code, self.rip = vector, error_code, rip
        self.insn_bytes, self.cr2 = insn_bytes, cr2


class InstructionLimitExceeded(EmulationError):
    pass


# Where the few C library functions compilers call on their own (block copies and fills)
# are given code of ours, so a function using them still runs without a C library.
BUILTIN_BASE = 0x7FFF_D000_0000
BUILTINS = {
    # mov rax, rdi; mov rcx, rdx; rep movsb; ret
    "memcpy": bytes.fromhex("4889f8 4889d1 f3a4 c3"),
    # mov r8, rdi; mov eax, esi; mov rcx, rdx; rep stosb; mov rax, r8; ret
    "memset": bytes.fromhex("4989f8 89f0 4889d1 f3aa 4c89c0 c3"),
}


def _u64(v):
    return v & 0xFFFF_FFFF_FFFF_FFFF


class Machine:
    def __init__(self, elf_path, stack_size=1 << 20):
        global _session
        if _session is None:
            _session = bochscpu.Session()
        self._pages = {}          # virtual page -> [host address, PTE's phys address, PTE flags, page's phys address]
        self._tables = {}         # (parent table phys, index) -> child table phys
        self._pml4, _ = self._new_phys_page()
        self._heap = HEAP_BASE
        self.symbols = {}         # name -> guest address
        self.imports = {}         # trap address -> name of an unresolved symbol
        self._builtins = {}       # C library function -> address of our code for it
        self.warnings = []
        self.last_state = None    # bochscpu.State after the last call
        self.instructions = 0     # instructions executed by the last call
        self._map(STACK_TOP - stack_size, stack_size, writable=True, executable=False)
        self._map(SENTINEL, PAGE, writable=False, executable=True)
        self.write(SENTINEL, b"\xf4")  # hlt
        self._load_elf(Path(elf_path).read_bytes())

    # ---- guest memory -------------------------------------------------------------------

    @staticmethod
    def _new_phys_page():
        global _phys_next
        gpa, _phys_next = _phys_next, _phys_next + PAGE
        hva = bochscpu.memory.allocate_host_page()  # zero-filled
        if not hva:
            raise MemoryError("allocate_host_page failed")
        bochscpu.memory.page_insert(gpa, hva)
        return gpa, hva

    def _phys_write_u64(self, gpa, value):
        ctypes.c_uint64.from_address(bochscpu.memory.phy_translate(gpa)).value = value

    def _table(self, parent, index):
        key = (parent, index)
        if key not in self._tables:
            child, _ = self._new_phys_page()
            self._tables[key] = child
            self._phys_write_u64(parent + 8 * index, child | PTE_P | PTE_RW)
        return self._tables[key]

    def _map(self, va, size, writable, executable):
        """Back [va, va+size) with fresh zeroed pages; widen permissions of pages already mapped."""
        flags = PTE_P | (PTE_RW if writable else 0) | (0 if executable else PTE_NX)
        for page in range(va & ~(PAGE - 1), va + size, PAGE):
            entry = self._pages.get(page)
            if entry is None:
                gpa, hva = self._new_phys_page()
                pdpt = self._table(self._pml4, (page >> 39) & 511)
                pd = self._table(pdpt, (page >> 30) & 511)
                pt = self._table(pd, (page >> 21) & 511)
                entry = self._pages[page] = [hva, pt + 8 * ((page >> 12) & 511), flags, gpa]
            else:  # e.g. two ELF segments sharing a page: union of the permissions
                entry[2] |= flags & PTE_RW
                if not flags & PTE_NX:
                    entry[2] &= ~PTE_NX
            self._phys_write_u64(entry[1], entry[3] | entry[2])

    def _chunks(self, addr, n):
        while n > 0:
            page, off = addr & ~(PAGE - 1), addr & (PAGE - 1)
            entry = self._pages.get(page)
            if entry is None:
                raise EmulationError(f"guest address {addr:#x} is not mapped")
            k = min(n, PAGE - off)
            yield entry[0] + off, k
            addr, n = addr + k, n - k

    def write(self, addr, data):
        data = bytes(data)
        pos = 0
        for host, k in self._chunks(addr, len(data)):
            ctypes.memmove(host, data[pos:pos + k], k)
            pos += k

    def read(self, addr, n):
        return b"".join(ctypes.string_at(host, k) for host, k in self._chunks(addr, n))

    def alloc(self, data, align=64):
        """Copy `data` into fresh guest memory and return its guest address.

        The buffer is placed as close to the end of its last page as `align` allows and is
        followed by an unmapped page, so reading or writing past its end faults (#PF)."""
        data = bytes(data)
        if align <= 0 or align & (align - 1):
            raise ValueError("align must be a power of two")
        npages = max(1, -(-len(data) // PAGE))
        while True:
            end = self._heap + npages * PAGE
            start = (end - len(data)) & ~(align - 1)
            if start >= self._heap:
                break
            npages += 1
        self._map(self._heap, npages * PAGE, writable=True, executable=False)
        self._heap = end + PAGE  # guard page
        self.write(start, data)
        return start

    # ---- ELF loading --------------------------------------------------------------------

    def _load_elf(self, elf):
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            raise EmulationError("not a little-endian ELF64 file")
        (e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum,
         e_shentsize, e_shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", elf, 16)
        if e_machine != 62:
            raise EmulationError(f"not an x86-64 ELF (e_machine={e_machine})")
        if e_type not in (2, 3):
            raise EmulationError("only executables and shared objects can be loaded (ET_EXEC/ET_DYN)")
        self.base = base = PIE_BASE if e_type == 3 else 0
        self._extents = []  # (start, end, name) of sized symbols, for symbolize()

        for i in range(e_phnum):
            p_type, p_flags, p_off, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from(
                "<IIQQQQQQ", elf, e_phoff + i * e_phentsize)
            if p_type == 1 and p_memsz:  # PT_LOAD
                self._map(base + p_vaddr, p_memsz, writable=bool(p_flags & 2), executable=bool(p_flags & 1))
                self.write(base + p_vaddr, elf[p_off:p_off + p_filesz])

        sections = [struct.unpack_from("<IIQQQQIIQQ", elf, e_shoff + i * e_shentsize)
                    for i in range(e_shnum)]

        def symtab(index):  # -> list of (name, value, shndx, bind)
            _, _, _, _, off, size, link, _, _, entsize = sections[index]
            strtab = sections[link]
            out = []
            for j in range(size // entsize):
                st_name, st_info, _, shndx, value, st_size = struct.unpack_from("<IBBHQQ", elf, off + j * entsize)
                s = strtab[4] + st_name
                name = elf[s:elf.index(b"\0", s)].decode()
                if shndx != 0 and shndx != 0xFFF1:  # defined, not absolute
                    value += base
                    if st_size:
                        self._extents.append((value, value + st_size, name))
                out.append((name, value, shndx, st_info >> 4))
            return out

        tables = {i: symtab(i) for i, s in enumerate(sections) if s[1] in (2, 11)}  # SYMTAB, DYNSYM
        for syms in tables.values():
            for name, value, shndx, bind in syms:
                if name and shndx != 0 and (bind != 0 or name not in self.symbols):
                    self.symbols[name] = value  # globals win over locals of the same name

        for sh in sections:
            if sh[1] == 4 and sh[2] & 2:  # SHT_RELA, SHF_ALLOC
                syms = tables.get(sh[6], [])
                for j in range(sh[5] // 24):
                    r_offset, r_info, addend = struct.unpack_from("<QQq", elf, sh[4] + j * 24)
                    sym = syms[r_info >> 32] if r_info >> 32 else None
                    self._relocate(base + r_offset, r_info & 0xFFFF_FFFF, sym, addend)

    def _resolve(self, sym):
        name, value, shndx, bind = sym
        if shndx != 0:
            return value
        if name in self.symbols:
            return self.symbols[name]
        if bind == 2:  # weak undefined
            return 0
        if name in BUILTINS:
            return self._builtin(name)
        for addr, imported in self.imports.items():
            if imported == name:
                return addr
        addr = TRAP_BASE + 16 * len(self.imports)
        self.imports[addr] = name
        return addr

    def _builtin(self, name):
        """The address of our own machine code for the C library function `name`."""
        if name not in self._builtins:
            if not self._builtins:
                self._map(BUILTIN_BASE, PAGE, writable=False, executable=True)
            addr = BUILTIN_BASE + 64 * len(self._builtins)
            self.write(addr, BUILTINS[name])
            self._builtins[name] = addr
        return self._builtins[name]

    def _relocate(self, where, rtype, sym, addend):
        if rtype == 8:                    # R_X86_64_RELATIVE
            value = self.base + addend
        elif rtype in (1, 6, 7):          # R_X86_64_64, GLOB_DAT, JUMP_SLOT
            value = self._resolve(sym) + (addend if rtype == 1 else 0)
        elif rtype == 0:
            return
        else:                             # TLS, IRELATIVE, COPY, ...: not supported
            self.warnings.append(f"relocation type {rtype} at {where:#x} ignored")
            return
        self.write(where, struct.pack("<Q", _u64(value)))

    # ---- calling ------------------------------------------------------------------------

    def symbolize(self, addr):
        """'name+offset' for an address inside a sized ELF symbol, else '?'."""
        if addr in self.imports:
            return f"unresolved import {self.imports[addr]}"
        for start, end, name in self._extents:
            if start <= addr < end:
                return f"{name}+{addr - start:#x}"
        return "?"

    def _initial_state(self, rip, args, callee_saved):
        s = bochscpu.State()
        bochscpu.cpu.set_long_mode(s)  # CR0.PE|PG, CR4.PAE, EFER.LME|LMA|NXE
        s.cr0 = (1 << 31) | (1 << 16) | (1 << 5) | (1 << 4) | (1 << 1) | 1  # PG WP NE ET MP PE
        s.cr4 = (1 << 5) | (1 << 9) | (1 << 10) | (1 << 18)  # PAE OSFXSR OSXMMEXCPT OSXSAVE
        s.xcr0 = 0xE7  # x87 | SSE | AVX | opmask | ZMM_Hi256 | Hi16_ZMM
        s.cr3 = self._pml4
        s.mxcsr = 0x1F80
        s.fpcw, s.fpsw, s.fptw = 0x037F, 0, 0xFFFF
        s.rflags = 0x2
        code, data = bochscpu.Segment(), bochscpu.Segment()
        for seg, sel, attr in ((code, 0x08, 0x209B), (data, 0x10, 0xC093)):  # 64-bit code / flat data, DPL 0
            seg.present, seg.selector, seg.base, seg.limit, seg.attr = True, sel, 0, 0xFFFF_FFFF, attr
        s.cs = code
        s.ss = s.ds = s.es = s.fs = s.gs = data
        rsp = STACK_TOP - 64 - 8  # rsp+8 is 16-byte aligned at function entry, as after a call
        self.write(rsp, struct.pack("<Q", SENTINEL))
        s.rsp, s.rip = rsp, rip
        for reg, value in zip(("rdi", "rsi", "rdx", "rcx", "r8", "r9"), args):
            setattr(s, reg, _u64(value))
        for reg, value in callee_saved.items():
            setattr(s, reg, value)
        return s

    def call(self, symbol, args=(), max_instructions=50_000_000):
        """Call `symbol` (a name or a guest address) with up to 6 integer/pointer arguments."""
        if len(args) > 6:
            raise ValueError("at most 6 integer/pointer arguments (rdi, rsi, rdx, rcx, r8, r9)")
        if isinstance(symbol, str):
            if symbol not in self.symbols:
                raise KeyError(f"symbol {symbol!r} not found in the ELF symbol tables")
            rip = self.symbols[symbol]
        else:
            rip = symbol
        callee_saved = {r: 0x5A5A_0000_0000_0000 | i
                        for i, r in enumerate(("rbx", "rbp", "r12", "r13", "r14", "r15"))}
        sess = _session
        sess.cpu.state = self._initial_state(rip, args, callee_saved)

        cpu = sess.cpu
        run = {"count": 0, "rip": rip, "exc": None, "halted": False, "limit": False}

        def before_execution(sess, cpu_id, insn):
            run["count"] += 1
            run["rip"] = cpu.rip
            if run["count"] > max_instructions:
                run["limit"] = True
                sess.stop()

        def exception(sess, cpu_id, vector, error_code):
            if run["exc"] is None:
                run["exc"] = (vector, error_code, run["rip"], cpu.cr2)
            sess.stop()

        def hlt(sess, cpu_id):
            run["halted"] = True
            sess.stop()

        hook = bochscpu.Hook()
        hook.before_execution = before_execution
        hook.exception = exception
        hook.hlt = hlt
        sess.run([hook])

        self.last_state = state = cpu.state
        self.instructions = run["count"]
        if run["exc"] is not None:
            raise self._exception(*run["exc"])
        if run["limit"]:
            raise InstructionLimitExceeded(
                f"{symbol}: more than {max_instructions} instructions executed; "
                f"last rip {run['rip']:#x} ({self.symbolize(run['rip'])})")
        if not run["halted"] or state.rip != SENTINEL + 1:
            raise EmulationError(f"{symbol}: stopped unexpectedly at rip {state.rip:#x} "
                                 f"({self.symbolize(state.rip)}), halted={run['halted']}")
        clobbered = [r for r, v in callee_saved.items() if getattr(state, r) != v]
        if clobbered or state.rsp != STACK_TOP - 64:
            raise EmulationError(f"{symbol}: ABI violation: callee-saved {clobbered} clobbered "
                                 f"or rsp not restored ({state.rsp:#x})")
        return state.rax

    def _exception(self, vector, error_code, last_rip, cr2):
        rip = last_rip
        if vector == 14 and error_code & 0x10:  # #PF on instruction fetch: rip is the target
            rip = cr2
        insn = b""
        for i in range(15):  # up to 15 bytes (the longest x86 instruction), while mapped
            if (rip + i) & ~(PAGE - 1) not in self._pages:
                break
            insn += self.read(rip + i, 1)
        msg = (f"CPU exception {VECTORS.get(vector, f'vector {vector}')} (error code {error_code:#x}) "
               f"at rip {rip:#x} ({self.symbolize(rip)}); bytes at rip: "
               f"{insn.hex(' ') if insn else '<unmapped>'}")
        if vector == 14:
            kind = "instruction fetch" if error_code & 0x10 else ("write" if error_code & 2 else "read")
            cause = "protection violation" if error_code & 1 else "unmapped page"
            msg += f"; {kind} of {cr2:#x}: {cause}"
            name = self.imports.get(cr2 & ~0xF)
            if name:
                msg += f" -- this is the unresolved external symbol {name!r} (no libc/OS in the emulator)"
            elif HEAP_BASE <= cr2 < self._heap:
                msg += " -- past the end (or before the start) of an alloc() buffer?"
        return CpuException(msg, vector, error_code, rip, insn, cr2 if vector == 14 else None)
