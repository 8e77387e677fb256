//! The SPIR-V a Vulkan driver should get from a shader on cooperative matrices: naga 30's
//! output with what its writer leaves out put back in, word by word.
//!
//! Why: naga declares the Vulkan memory model in every module that uses cooperative
//! matrices (SPIR-V demands it of them) but writes the rest of the module as it would under
//! GLSL450's model, where workgroup memory is coherent by itself (gfx-rs/wgpu#8805, open in
//! naga 30). Under Vulkan's model a load or store without `NonPrivatePointer` is private to
//! its invocation, and a barrier without `MakeAvailable`/`MakeVisible` publishes nothing:
//! a compiler may keep a staged tile in registers across `workgroupBarrier()`, so the other
//! subgroups read what was there before. lavapipe's compiler happens never to; NVIDIA's
//! gave a product whose first element was -3.23 for 2.80 (docs/gpu.md). What
//! [`for_vulkan`] adds is what SPIR-V's `SPV_KHR_vulkan_memory_model` asks for the
//! kernels' pattern (stage a tile in workgroup memory, barrier, read the others' values):
//! 1. every load and store through a pointer into workgroup memory, cooperative-matrix
//!    loads and stores among them, marked `NonPrivatePointer`;
//! 2. every barrier over workgroup memory given `MakeAvailable | MakeVisible` (a new
//!    constant: naga shares one constant between every use of a number);
//! 3. the layout decorations naga puts on types that live off buffers dropped
//!    (`ArrayStride`, struct `Offset`s), which Vulkan forbids on workgroup memory
//!    (VUID-StandaloneSpirv-None-10684; naga's open bug gfx-rs/wgpu#7696).
//!
//! Storage-buffer accesses stay private: in taks's kernels no invocation reads what
//! another wrote to a buffer during a launch. A module under GLSL450's model (every
//! shader without cooperative matrices) gets only item 3.

use std::collections::{HashMap, HashSet};

const MEMORY_MODEL: u32 = 14;
const TYPE_ARRAY: u32 = 28;
const TYPE_RUNTIME_ARRAY: u32 = 29;
const TYPE_STRUCT: u32 = 30;
const TYPE_POINTER: u32 = 32;
const CONSTANT: u32 = 43;
const FUNCTION_PARAMETER: u32 = 55;
const VARIABLE: u32 = 59;
const LOAD: u32 = 61;
const STORE: u32 = 62;
const COPY_MEMORY: u32 = 63;
const COPY_MEMORY_SIZED: u32 = 64;
const ACCESS_CHAIN: u32 = 65;
const IN_BOUNDS_ACCESS_CHAIN: u32 = 66;
const PTR_ACCESS_CHAIN: u32 = 67;
const DECORATE: u32 = 71;
const MEMBER_DECORATE: u32 = 72;
const COPY_OBJECT: u32 = 83;
const SELECT: u32 = 169;
const CONTROL_BARRIER: u32 = 224;
const MEMORY_BARRIER: u32 = 225;
const PHI: u32 = 245;
const COOPERATIVE_MATRIX_LOAD: u32 = 4457;
const COOPERATIVE_MATRIX_STORE: u32 = 4458;

const VULKAN_MEMORY_MODEL: u32 = 3;
const WORKGROUP: u32 = 4;
const PRIVATE: u32 = 6;
const FUNCTION: u32 = 7;

const ARRAY_STRIDE: u32 = 6;
const MATRIX_STRIDE: u32 = 7;
const OFFSET: u32 = 35;

/// The memory-access operand's bit.
pub const NON_PRIVATE_POINTER: u32 = 0x20;
/// Memory-semantics bits.
pub const WORKGROUP_MEMORY: u32 = 0x100;
pub const MAKE_AVAILABLE: u32 = 0x2000;
pub const MAKE_VISIBLE: u32 = 0x4000;

/// One instruction's words, from its opcode word.
fn instructions(words: &[u32]) -> Result<Vec<&[u32]>, String> {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        return Err("not a SPIR-V module (no header)".into());
    }
    let mut out = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return Err(format!(
                "a SPIR-V instruction of {count} words at word {at}"
            ));
        }
        out.push(&words[at..at + count]);
        at += count;
    }
    Ok(out)
}

fn opcode(ins: &[u32]) -> u32 {
    ins[0] & 0xffff
}

/// `words`, a module naga wrote, as a Vulkan driver should receive it (the module's
/// docs). An error where it holds what this does not know how to mend (a pointer whose
/// storage class it cannot tell, a memory copy in workgroup memory, a type laid out for a
/// buffer and also used in workgroup memory).
pub fn for_vulkan(words: &[u32]) -> Result<Vec<u32>, String> {
    let list = instructions(words)?;
    let dropped = layouts_off_buffers(&list)?;
    let vulkan_model = vulkan_model(&list);
    let known = Known::of(&list);
    // The new semantics constants: (original id) -> (new id, its instruction).
    let mut bound = words[3];
    let mut published: HashMap<u32, (u32, [u32; 4])> = HashMap::new();
    let mut body: Vec<Vec<u32>> = Vec::with_capacity(list.len());
    for ins in &list {
        if dropped.contains(&ins.as_ptr()) {
            continue;
        }
        let mut ins = ins.to_vec();
        if vulkan_model {
            if matches!(opcode(&ins), COPY_MEMORY | COPY_MEMORY_SIZED) {
                for pointer in [ins[1], ins[2]] {
                    if known.class_of(pointer)? == WORKGROUP {
                        return Err("a memory copy in workgroup memory".into());
                    }
                }
            }
            if let Some((pointer, operand)) = access(&ins)
                && known.class_of(ins[pointer])? == WORKGROUP
            {
                mark_non_private(&mut ins, operand);
            }
            if let Some(at) = semantics_at(&ins) {
                let id = ins[at];
                let (ty, value) = known.constant(id)?;
                if value & WORKGROUP_MEMORY != 0 {
                    let (new, _) = published.entry(id).or_insert_with(|| {
                        let new = bound;
                        bound += 1;
                        let value = value | MAKE_AVAILABLE | MAKE_VISIBLE;
                        (new, [4 << 16 | CONSTANT, ty, new, value])
                    });
                    ins[at] = *new;
                }
            }
        }
        body.push(ins);
    }
    let mut out = words[..5].to_vec();
    out[3] = bound;
    for ins in body {
        let defines = (opcode(&ins) == CONSTANT).then(|| ins[2]);
        out.extend_from_slice(&ins);
        // Each new constant right after the one it copies: still among the constants,
        // before any function uses it.
        if let Some((_, new)) = defines.and_then(|id| published.get(&id)) {
            out.extend_from_slice(new);
        }
    }
    Ok(out)
}

/// Whether the module declares the Vulkan memory model.
fn vulkan_model(list: &[&[u32]]) -> bool {
    list.iter()
        .any(|ins| opcode(ins) == MEMORY_MODEL && ins.get(2) == Some(&VULKAN_MEMORY_MODEL))
}

/// Where a load or store (cooperative ones included) has its pointer and its memory
/// operand (past the end where it has none); `None` for every other instruction.
fn access(ins: &[u32]) -> Option<(usize, usize)> {
    match opcode(ins) {
        LOAD => Some((3, 4)),
        STORE => Some((1, 3)),
        COOPERATIVE_MATRIX_LOAD => Some((3, 6)),
        COOPERATIVE_MATRIX_STORE => Some((1, 5)),
        _ => None,
    }
}

/// Where a barrier has its memory semantics; `None` for every other instruction.
fn semantics_at(ins: &[u32]) -> Option<usize> {
    match opcode(ins) {
        CONTROL_BARRIER => Some(3),
        MEMORY_BARRIER => Some(2),
        _ => None,
    }
}

/// What a module declares that its accesses and barriers refer to.
struct Known {
    /// The storage class of every pointer value.
    pointers: HashMap<u32, u32>,
    /// Every 32-bit constant: its type and value.
    constants: HashMap<u32, (u32, u32)>,
}

impl Known {
    fn of(list: &[&[u32]]) -> Self {
        let mut pointer_types = HashMap::new();
        let mut pointers = HashMap::new();
        let mut constants = HashMap::new();
        for ins in list {
            match opcode(ins) {
                TYPE_POINTER => {
                    pointer_types.insert(ins[1], ins[2]);
                }
                CONSTANT if ins.len() == 4 => {
                    constants.insert(ins[2], (ins[1], ins[3]));
                }
                VARIABLE
                | FUNCTION_PARAMETER
                | ACCESS_CHAIN
                | IN_BOUNDS_ACCESS_CHAIN
                | PTR_ACCESS_CHAIN
                | COPY_OBJECT
                | SELECT
                | PHI => {
                    if let Some(&class) = pointer_types.get(&ins[1]) {
                        pointers.insert(ins[2], class);
                    }
                }
                _ => {}
            }
        }
        Self {
            pointers,
            constants,
        }
    }

    fn class_of(&self, pointer: u32) -> Result<u32, String> {
        self.pointers
            .get(&pointer)
            .copied()
            .ok_or_else(|| format!("a memory access through %{pointer}, of no known storage class"))
    }

    fn constant(&self, id: u32) -> Result<(u32, u32), String> {
        self.constants
            .get(&id)
            .copied()
            .ok_or_else(|| format!("a barrier's semantics %{id} are not a constant"))
    }
}

/// Add `NonPrivatePointer` to the memory operand of `ins`, at word `at` (appended where
/// the access has none).
fn mark_non_private(ins: &mut Vec<u32>, at: usize) {
    match ins.get_mut(at) {
        Some(mask) => *mask |= NON_PRIVATE_POINTER,
        None => {
            ins.push(NON_PRIVATE_POINTER);
            let count = ins.len() as u32;
            ins[0] = count << 16 | opcode(ins);
        }
    }
}

/// The layout decorations on types that live in workgroup, private or function memory
/// (by the address of their instruction in `list`); an error where such a type is also
/// laid out for a buffer, where dropping its decorations would change the buffer's layout.
fn layouts_off_buffers(list: &[&[u32]]) -> Result<HashSet<*const u32>, String> {
    // The arrays and structs inside each type, and the pointees of each storage class.
    let mut inside: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut off_buffers = Vec::new();
    let mut laid_out = Vec::new();
    for ins in list {
        match opcode(ins) {
            TYPE_ARRAY | TYPE_RUNTIME_ARRAY => {
                inside.insert(ins[1], vec![ins[2]]);
            }
            TYPE_STRUCT => {
                inside.insert(ins[1], ins[2..].to_vec());
            }
            TYPE_POINTER if [WORKGROUP, PRIVATE, FUNCTION].contains(&ins[2]) => {
                off_buffers.push(ins[3])
            }
            TYPE_POINTER => laid_out.push(ins[3]),
            _ => {}
        }
    }
    let reach = |mut todo: Vec<u32>| {
        let mut seen = HashSet::new();
        while let Some(t) = todo.pop() {
            if let Some(parts) = inside.get(&t)
                && seen.insert(t)
            {
                todo.extend(parts);
            }
        }
        seen
    };
    let off_buffers = reach(off_buffers);
    if !off_buffers.is_disjoint(&reach(laid_out)) {
        return Err("a type both in a buffer and in workgroup or function memory".into());
    }
    Ok(list
        .iter()
        .filter(|ins| match opcode(ins) {
            DECORATE => off_buffers.contains(&ins[1]) && ins[2] == ARRAY_STRIDE,
            MEMBER_DECORATE => {
                off_buffers.contains(&ins[1]) && matches!(ins[3], OFFSET | MATRIX_STRIDE)
            }
            _ => false,
        })
        .map(|ins| ins.as_ptr())
        .collect())
}

/// What [`for_vulkan`] must leave true of a module, read back from its words: every
/// access through a pointer into workgroup memory marked `NonPrivatePointer`, every
/// barrier over workgroup memory making its writes available and visible, under the
/// Vulkan memory model (under GLSL450's, workgroup memory is coherent: nothing to
/// publish, none counted). The accesses and barriers it found, or the first that breaks
/// the rule.
pub fn workgroup_memory_published(words: &[u32]) -> Result<(usize, usize), String> {
    let list = instructions(words)?;
    if !vulkan_model(&list) {
        return Ok((0, 0));
    }
    let known = Known::of(&list);
    let (mut accesses, mut barriers) = (0, 0);
    for ins in &list {
        if let Some((pointer, operand)) = access(ins)
            && known.class_of(ins[pointer])? == WORKGROUP
        {
            accesses += 1;
            if ins
                .get(operand)
                .is_none_or(|m| m & NON_PRIVATE_POINTER == 0)
            {
                return Err(format!("a private access to workgroup memory: {ins:?}"));
            }
        }
        if let Some(at) = semantics_at(ins) {
            let (_, semantics) = known.constant(ins[at])?;
            let both = MAKE_AVAILABLE | MAKE_VISIBLE;
            if semantics & WORKGROUP_MEMORY != 0 {
                barriers += 1;
                if semantics & both != both {
                    return Err(format!("a barrier that publishes nothing: {ins:?}"));
                }
            }
        }
    }
    Ok((accesses, barriers))
}
