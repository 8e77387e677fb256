//! The part of Python's pickle format that PyTorch's `torch.save` writes for a
//! `state_dict` (protocols 2 to 5), read without running anything.
//!
//! A pickle is a program for a stack machine, and Python's reader calls whatever
//! function the program names: loading an untrusted `.pth` with `torch.load` can run any
//! code. This reader builds plain values only (numbers, strings, tuples, lists, dicts)
//! and knows a closed list of names ([`Global`]): the ordered dict, the two functions
//! that rebuild a tensor or a parameter from a storage, and the storage types. Any other
//! name (`os.system`, `builtins.eval`, a training script's `argparse.Namespace`) is
//! refused with its name, before anything after it is read.
//!
//! A memo slot keeps a copy of the value as it was when stored, which is all a
//! `state_dict` needs (it only refers back to names, strings and empty dicts). Every
//! copy the program asks for (storing into the memo, recalling from it, `DUP`) is
//! counted against one budget, so a small file cannot build a huge value by copying a
//! copy: `DUP` then `APPEND`, forty times over, would otherwise be 2^40 values.

use std::collections::HashMap;

/// A storage's element type, from its class name (`torch.FloatStorage`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F16,
    BF16,
    F64,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
}

impl Dtype {
    fn from_storage(name: &str) -> Option<Dtype> {
        Some(match name {
            "FloatStorage" => Dtype::F32,
            "HalfStorage" => Dtype::F16,
            "BFloat16Storage" => Dtype::BF16,
            "DoubleStorage" => Dtype::F64,
            "LongStorage" => Dtype::I64,
            "IntStorage" => Dtype::I32,
            "ShortStorage" => Dtype::I16,
            "CharStorage" => Dtype::I8,
            "ByteStorage" => Dtype::U8,
            "BoolStorage" => Dtype::Bool,
            _ => return None,
        })
    }

    /// Whether the elements are floating-point numbers (the weights a network loads).
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F16 | Dtype::BF16 | Dtype::I16 => 2,
            Dtype::I8 | Dtype::U8 | Dtype::Bool => 1,
        }
    }
}

/// The names a `state_dict` pickle may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Global {
    /// `collections.OrderedDict`.
    OrderedDict,
    /// `torch._utils._rebuild_tensor_v2`.
    RebuildTensor,
    /// `torch._utils._rebuild_parameter`.
    RebuildParameter,
    /// `torch.FloatStorage` and the other storage types.
    Storage(Dtype),
}

impl Global {
    fn find(module: &str, name: &str) -> Option<Global> {
        match (module, name) {
            ("collections", "OrderedDict") => Some(Global::OrderedDict),
            ("torch._utils", "_rebuild_tensor_v2") => Some(Global::RebuildTensor),
            ("torch._utils", "_rebuild_parameter") => Some(Global::RebuildParameter),
            ("torch", storage) => Dtype::from_storage(storage).map(Global::Storage),
            _ => None,
        }
    }
}

/// A tensor as the pickle describes it: a view into a storage (a file of the archive).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRef {
    /// The storage's name in the archive (`data/<key>`).
    pub key: String,
    pub dtype: Dtype,
    /// Elements in the storage.
    pub storage_len: usize,
    /// In elements.
    pub offset: usize,
    pub shape: Vec<usize>,
    /// In elements.
    pub stride: Vec<usize>,
}

/// A value the reader built.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    /// Keys in the order the file gives them.
    Dict(Vec<(Value, Value)>),
    Global(Global),
    /// A persistent id `('storage', type, key, location, numel)`.
    Storage {
        dtype: Dtype,
        key: String,
        len: usize,
    },
    Tensor(TensorRef),
}

impl Value {
    /// Nodes in this value, what a copy costs.
    fn size(&self) -> usize {
        1 + match self {
            Value::Tuple(v) | Value::List(v) => v.iter().map(Value::size).sum(),
            Value::Dict(v) => v.iter().map(|(k, v)| k.size() + v.size()).sum(),
            Value::Str(s) => s.len() / 64,
            Value::Bytes(b) => b.len() / 64,
            _ => 0,
        }
    }
}

/// Stack entries: values with how deep they nest, and the marks `MARK` sets.
enum Item {
    Mark,
    Value(Value, Depth),
}

/// How many containers deep a value nests: 1 for a leaf. Kept beside each value, since
/// measuring it would walk the value, and that walk (like dropping the value) recurses.
type Depth = u32;

/// The deepest nesting a file may build. A `state_dict` nests a handful of levels (the
/// dict, a tensor's arguments, its storage's id); a hostile file that nests lists
/// hundreds of thousands deep would otherwise overflow the stack when the value is
/// dropped, copied or printed. serde_json stops at the same depth.
pub const MAX_DEPTH: Depth = 128;

/// The most value nodes a file may copy, into and out of the memo or by `DUP` (a
/// `state_dict` copies a few per tensor).
const COPY_BUDGET: usize = 1 << 24;

/// Run the pickle `bytes` and return the value it stops with. The error says what is
/// wrong and where (a byte offset).
pub fn read(bytes: &[u8]) -> Result<Value, String> {
    Machine {
        bytes,
        at: 0,
        stack: Vec::new(),
        memo: HashMap::new(),
        copied: 0,
    }
    .run()
}

struct Machine<'a> {
    bytes: &'a [u8],
    at: usize,
    stack: Vec<Item>,
    memo: HashMap<u32, (Value, Depth)>,
    copied: usize,
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| format!("the pickle ends inside an operand at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }

    fn len_u8(&mut self) -> Result<usize, String> {
        Ok(self.take(1)?[0] as usize)
    }

    fn len_u32(&mut self) -> Result<usize, String> {
        Ok(u32::from_le_bytes(self.take_array()?) as usize)
    }

    fn len_u64(&mut self) -> Result<usize, String> {
        usize::try_from(u64::from_le_bytes(self.take_array()?))
            .map_err(|_| "a length does not fit in memory".to_string())
    }

    /// A newline-terminated line (the operand of `GLOBAL`).
    fn line(&mut self) -> Result<String, String> {
        let rest = &self.bytes[self.at..];
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or("the pickle ends inside a name")?;
        let line = String::from_utf8(rest[..end].to_vec()).map_err(|_| "a name is not UTF-8")?;
        self.at += end + 1;
        Ok(line)
    }

    fn string(&mut self, len: usize) -> Result<Value, String> {
        let bytes = self.take(len)?.to_vec();
        String::from_utf8(bytes)
            .map(Value::Str)
            .map_err(|_| format!("a string at byte {} is not UTF-8", self.at))
    }

    /// A leaf value: it holds no other.
    fn push(&mut self, value: Value) {
        self.stack.push(Item::Value(value, 1));
    }

    /// A container of values `depth` deep, refused past [`MAX_DEPTH`].
    fn push_nested(&mut self, value: Value, depth: Depth) -> Result<(), String> {
        self.check_depth(depth)?;
        self.stack.push(Item::Value(value, depth));
        Ok(())
    }

    fn check_depth(&self, depth: Depth) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "values nest more than {MAX_DEPTH} deep at byte {}; a state_dict nests a few levels",
                self.at
            ));
        }
        Ok(())
    }

    fn pop(&mut self) -> Result<Value, String> {
        self.pop_with_depth().map(|(v, _)| v)
    }

    fn pop_with_depth(&mut self) -> Result<(Value, Depth), String> {
        match self.stack.pop() {
            Some(Item::Value(v, depth)) => Ok((v, depth)),
            Some(Item::Mark) => Err(format!("a mark where a value belongs at byte {}", self.at)),
            None => Err(format!("the stack is empty at byte {}", self.at)),
        }
    }

    fn top(&mut self) -> Result<&mut Value, String> {
        self.top_with_depth().map(|(v, _)| v)
    }

    fn top_with_depth(&mut self) -> Result<(&mut Value, &mut Depth), String> {
        match self.stack.last_mut() {
            Some(Item::Value(v, depth)) => Ok((v, depth)),
            _ => Err(format!("no value on the stack at byte {}", self.at)),
        }
    }

    /// The top value after `children` of `depth` went into it (APPEND, SETITEM and the
    /// like), refused when that nests it too deep.
    fn deepen_top(&mut self, depth: Depth) -> Result<(), String> {
        let (_, top) = self.top_with_depth()?;
        *top = (*top).max(depth.saturating_add(1));
        let now = *top;
        self.check_depth(now)
    }

    /// The values above the last mark, which is removed, and the deepest of them.
    fn pop_to_mark(&mut self) -> Result<(Vec<Value>, Depth), String> {
        let mark = self
            .stack
            .iter()
            .rposition(|i| matches!(i, Item::Mark))
            .ok_or_else(|| format!("no mark at byte {}", self.at))?;
        let mut deepest = 0;
        let values = self
            .stack
            .drain(mark + 1..)
            .map(|i| match i {
                Item::Value(v, depth) => {
                    deepest = deepest.max(depth);
                    v
                }
                Item::Mark => unreachable!("the last mark is below these"),
            })
            .collect();
        self.stack.pop();
        Ok((values, deepest))
    }

    /// Counts a copy of `value` against [`COPY_BUDGET`], before it is taken.
    fn charge_copy(copied: &mut usize, value: &Value, at: usize) -> Result<(), String> {
        *copied = copied.saturating_add(value.size());
        if *copied > COPY_BUDGET {
            return Err(format!(
                "the pickle copies more values than a state_dict has (over {COPY_BUDGET} by byte {at})"
            ));
        }
        Ok(())
    }

    fn memoize(&mut self, slot: u32) -> Result<(), String> {
        let at = self.at;
        let Some(Item::Value(value, depth)) = self.stack.last() else {
            return Err(format!("no value on the stack at byte {at}"));
        };
        Self::charge_copy(&mut self.copied, value, at)?;
        let kept = (value.clone(), *depth);
        self.memo.insert(slot, kept);
        Ok(())
    }

    fn recall(&mut self, slot: u32) -> Result<(), String> {
        let at = self.at;
        let (value, depth) = self
            .memo
            .get(&slot)
            .ok_or_else(|| format!("memo slot {slot} is empty at byte {at}"))?;
        Self::charge_copy(&mut self.copied, value, at)?;
        let copy = Item::Value(value.clone(), *depth);
        self.stack.push(copy);
        Ok(())
    }

    /// `DUP`: a copy of the top value, pushed.
    fn dup(&mut self) -> Result<(), String> {
        let at = self.at;
        let Some(Item::Value(top, depth)) = self.stack.last() else {
            return Err(format!("no value on the stack at byte {at}"));
        };
        Self::charge_copy(&mut self.copied, top, at)?;
        let copy = Item::Value(top.clone(), *depth);
        self.stack.push(copy);
        Ok(())
    }

    fn global(&mut self, module: &str, name: &str) -> Result<(), String> {
        let global = Global::find(module, name).ok_or_else(|| {
            format!(
                "refuses the global {module}.{name}: only a state_dict's tensors are read, nothing is run"
            )
        })?;
        self.push(Value::Global(global));
        Ok(())
    }

    fn run(mut self) -> Result<Value, String> {
        loop {
            let at = self.at;
            let op = *self.take(1)?.first().expect("one byte");
            match op {
                0x80 => {
                    let protocol = self.take(1)?[0];
                    if !(2..=5).contains(&protocol) {
                        return Err(format!(
                            "pickle protocol {protocol} is not one torch.save writes"
                        ));
                    }
                }
                0x95 => {
                    self.take(8)?;
                }
                b'.' => {
                    let value = self.pop()?;
                    return Ok(value);
                }
                b'(' => self.stack.push(Item::Mark),
                b'0' => {
                    self.stack.pop().ok_or("POP on an empty stack")?;
                }
                b'1' => {
                    self.pop_to_mark()?;
                }
                b'2' => self.dup()?,
                b'N' => self.push(Value::None),
                0x88 => self.push(Value::Bool(true)),
                0x89 => self.push(Value::Bool(false)),
                b'J' => {
                    let v = i32::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v as i64));
                }
                b'K' => {
                    let v = self.take(1)?[0];
                    self.push(Value::Int(v as i64));
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v as i64));
                }
                0x8a => {
                    let n = self.len_u8()?;
                    if n > 8 {
                        return Err(format!("an integer of {n} bytes at byte {at}"));
                    }
                    let bytes = self.take(n)?;
                    let mut v: i64 = 0;
                    for (i, b) in bytes.iter().enumerate() {
                        v |= (*b as i64) << (8 * i);
                    }
                    if n > 0 && n < 8 && bytes[n - 1] & 0x80 != 0 {
                        v -= 1i64 << (8 * n);
                    }
                    self.push(Value::Int(v));
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.take_array()?);
                    self.push(Value::Float(v));
                }
                b'X' => {
                    let n = self.len_u32()?;
                    let s = self.string(n)?;
                    self.push(s);
                }
                0x8c => {
                    let n = self.len_u8()?;
                    let s = self.string(n)?;
                    self.push(s);
                }
                0x8d => {
                    let n = self.len_u64()?;
                    let s = self.string(n)?;
                    self.push(s);
                }
                b'B' | b'C' | 0x8e => {
                    let n = match op {
                        b'B' => self.len_u32()?,
                        b'C' => self.len_u8()?,
                        _ => self.len_u64()?,
                    };
                    let b = self.take(n)?.to_vec();
                    self.push(Value::Bytes(b));
                }
                b')' => self.push(Value::Tuple(Vec::new())),
                b't' => {
                    let (items, depth) = self.pop_to_mark()?;
                    self.push_nested(Value::Tuple(items), depth + 1)?;
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let mut items = Vec::with_capacity(n);
                    let mut deepest = 0;
                    for _ in 0..n {
                        let (item, depth) = self.pop_with_depth()?;
                        deepest = deepest.max(depth);
                        items.push(item);
                    }
                    items.reverse();
                    self.push_nested(Value::Tuple(items), deepest + 1)?;
                }
                b']' => self.push(Value::List(Vec::new())),
                b'l' => {
                    let (items, depth) = self.pop_to_mark()?;
                    self.push_nested(Value::List(items), depth + 1)?;
                }
                b'a' => {
                    let (item, depth) = self.pop_with_depth()?;
                    match self.top()? {
                        Value::List(list) => list.push(item),
                        _ => return Err(format!("APPEND to a non-list at byte {at}")),
                    }
                    self.deepen_top(depth)?;
                }
                b'e' => {
                    let (items, depth) = self.pop_to_mark()?;
                    match self.top()? {
                        Value::List(list) => list.extend(items),
                        _ => return Err(format!("APPENDS to a non-list at byte {at}")),
                    }
                    self.deepen_top(depth)?;
                }
                b'}' => self.push(Value::Dict(Vec::new())),
                b'd' => {
                    let (items, depth) = self.pop_to_mark()?;
                    let pairs = pairs(items, at)?;
                    self.push_nested(Value::Dict(pairs), depth + 1)?;
                }
                b's' => {
                    let (value, value_depth) = self.pop_with_depth()?;
                    let (key, key_depth) = self.pop_with_depth()?;
                    match self.top()? {
                        Value::Dict(dict) => dict.push((key, value)),
                        _ => return Err(format!("SETITEM on a non-dict at byte {at}")),
                    }
                    self.deepen_top(value_depth.max(key_depth))?;
                }
                b'u' => {
                    let (items, depth) = self.pop_to_mark()?;
                    let new = pairs(items, at)?;
                    match self.top()? {
                        Value::Dict(dict) => dict.extend(new),
                        _ => return Err(format!("SETITEMS on a non-dict at byte {at}")),
                    }
                    self.deepen_top(depth)?;
                }
                b'q' => {
                    let slot = self.take(1)?[0] as u32;
                    self.memoize(slot)?;
                }
                b'r' => {
                    let slot = u32::from_le_bytes(self.take_array()?);
                    self.memoize(slot)?;
                }
                0x94 => {
                    let slot = self.memo.len() as u32;
                    self.memoize(slot)?;
                }
                b'h' => {
                    let slot = self.take(1)?[0] as u32;
                    self.recall(slot)?;
                }
                b'j' => {
                    let slot = u32::from_le_bytes(self.take_array()?);
                    self.recall(slot)?;
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(&module, &name)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module, name) {
                        (Value::Str(module), Value::Str(name)) => self.global(&module, &name)?,
                        _ => return Err(format!("STACK_GLOBAL without two names at byte {at}")),
                    }
                }
                b'Q' => {
                    let id = self.pop()?;
                    let storage = persistent_storage(id).ok_or_else(|| {
                        format!("a persistent id that is not a storage at byte {at}")
                    })?;
                    self.push(storage);
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let value = reduce(callable, args).map_err(|e| format!("{e} at byte {at}"))?;
                    self.push(value);
                }
                b'b' => {
                    // The state of an ordered dict (its `_metadata`) or of a tensor: kept
                    // neither by a state_dict's reader.
                    self.pop()?;
                    match self.top()? {
                        Value::Dict(_) | Value::Tensor(_) => {}
                        _ => {
                            return Err(format!(
                                "BUILD on something not a dict or tensor at byte {at}"
                            ));
                        }
                    }
                }
                other => {
                    return Err(format!(
                        "pickle opcode 0x{other:02x} at byte {at} is not one a state_dict uses"
                    ));
                }
            }
        }
    }
}

/// Alternate keys and values into pairs.
fn pairs(items: Vec<Value>, at: usize) -> Result<Vec<(Value, Value)>, String> {
    if !items.len().is_multiple_of(2) {
        return Err(format!("a dict with a key and no value at byte {at}"));
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut items = items.into_iter();
    while let (Some(k), Some(v)) = (items.next(), items.next()) {
        out.push((k, v));
    }
    Ok(out)
}

fn persistent_storage(id: Value) -> Option<Value> {
    let Value::Tuple(parts) = id else { return None };
    match parts.as_slice() {
        [
            Value::Str(kind),
            Value::Global(Global::Storage(dtype)),
            Value::Str(key),
            Value::Str(_location),
            Value::Int(len),
        ] if kind == "storage" => Some(Value::Storage {
            dtype: *dtype,
            key: key.clone(),
            len: usize::try_from(*len).ok()?,
        }),
        _ => None,
    }
}

/// Apply one of the known callables to its arguments.
fn reduce(callable: Value, args: Value) -> Result<Value, String> {
    let Value::Tuple(args) = args else {
        return Err("REDUCE without an argument tuple".into());
    };
    match callable {
        Value::Global(Global::OrderedDict) if args.is_empty() => Ok(Value::Dict(Vec::new())),
        Value::Global(Global::RebuildParameter) => match args.into_iter().next() {
            Some(tensor @ Value::Tensor(_)) => Ok(tensor),
            _ => Err("_rebuild_parameter of something not a tensor".into()),
        },
        Value::Global(Global::RebuildTensor) => rebuild_tensor(args),
        other => Err(format!("cannot call {other:?}")),
    }
}

/// `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])`.
fn rebuild_tensor(args: Vec<Value>) -> Result<Value, String> {
    let ints = |v: &Value| -> Option<Vec<usize>> {
        let Value::Tuple(items) = v else { return None };
        items
            .iter()
            .map(|i| match i {
                Value::Int(n) => usize::try_from(*n).ok(),
                _ => None,
            })
            .collect()
    };
    match args.as_slice() {
        [
            Value::Storage { dtype, key, len },
            Value::Int(offset),
            size,
            stride,
            ..,
        ] if (6..=7).contains(&args.len()) => {
            let shape = ints(size).ok_or("a tensor's size is not a tuple of sizes")?;
            let stride = ints(stride).ok_or("a tensor's stride is not a tuple of strides")?;
            if shape.len() != stride.len() {
                return Err("a tensor's size and stride differ in length".into());
            }
            Ok(Value::Tensor(TensorRef {
                key: key.clone(),
                dtype: *dtype,
                storage_len: *len,
                offset: usize::try_from(*offset).map_err(|_| "a negative storage offset")?,
                shape,
                stride,
            }))
        }
        _ => Err("_rebuild_tensor_v2 with arguments a tensor does not have".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pickle.dumps(collections.OrderedDict([("a", 1), ("b", (2.5, "x"))]), protocol=2)`.
    const ORDERED: &[u8] = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00aq\x02K\x01X\x01\x00\x00\x00bq\x03G@\x04\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x04\x86q\x05u.";

    #[test]
    fn reads_an_ordered_dict() {
        let value = read(ORDERED).unwrap();
        assert_eq!(
            value,
            Value::Dict(vec![
                (Value::Str("a".into()), Value::Int(1)),
                (
                    Value::Str("b".into()),
                    Value::Tuple(vec![Value::Float(2.5), Value::Str("x".into())])
                ),
            ])
        );
    }

    /// `pickle.dumps(os.system, protocol=2)` and protocol 4's STACK_GLOBAL form.
    #[test]
    fn refuses_other_globals_by_name() {
        let err = read(b"\x80\x02cposix\nsystem\nq\x00.").unwrap_err();
        assert!(err.contains("posix.system"), "{err}");
        let err = read(b"\x80\x04\x95\x15\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x94.")
            .unwrap_err();
        assert!(err.contains("builtins.eval"), "{err}");
    }

    #[test]
    fn negative_long_and_truncation() {
        // LONG1 of -2 in two bytes, then STOP.
        assert_eq!(read(b"\x80\x02\x8a\x02\xfe\xff.").unwrap(), Value::Int(-2));
        let err = read(&ORDERED[..ORDERED.len() - 5]).unwrap_err();
        assert!(err.contains("ends") || err.contains("stack"), "{err}");
    }

    /// Every copy counts (out of the memo, into it, by DUP): doubling a list 40 times
    /// is refused whichever way the program copies.
    #[test]
    fn copies_are_bounded() {
        // Protocol 2, `start`, then `step` `times` over, then STOP.
        let program = |start: &[u8], step: &[u8], times: usize| {
            let mut p = b"\x80\x02".to_vec();
            p.extend_from_slice(start);
            p.extend(step.repeat(times));
            p.push(b'.');
            p
        };
        // [memo, memo] -> memo, 40 times.
        let recalled = program(b"]q\x00", b"(h\x00h\x00lq\x00", 40);
        assert!(read(&recalled).unwrap_err().contains("copies"));
        // DUP then APPEND doubles the list in place, 40 times: 2^40 values from 84 bytes.
        let duplicated = program(b"]", b"2a", 40);
        assert!(read(&duplicated).unwrap_err().contains("copies"));
        // The same through the memo alone: store, then append the list to itself by
        // recalling it (a memo store copies too).
        let stored = program(b"]", b"q\x00h\x00a", 40);
        assert!(read(&stored).unwrap_err().contains("copies"));
        // Twenty doublings (a million values) stay inside the budget: the limit is not
        // so tight that it refuses what a large state_dict copies.
        assert!(read(&program(b"]", b"2a", 20)).is_ok());
    }

    /// Mutations of a real `torch.save` pickle (the fixture state_dict's `data.pkl`):
    /// bytes changed, cut and repeated, 20,000 of them, each read to a value or an
    /// error, never a panic (the fuzzers need a nightly toolchain; this runs everywhere).
    #[test]
    fn mutated_pickles_never_panic() {
        let path = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("tests/fixtures/state-dict.pth");
        let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
        let mut valid = Vec::new();
        std::io::Read::read_to_end(
            &mut archive.by_name("state-dict/data.pkl").unwrap(),
            &mut valid,
        )
        .unwrap();
        let valid = &valid[..];
        assert!(matches!(read(valid), Ok(Value::Dict(_))));
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for _ in 0..20_000 {
            let mut bytes = valid.to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bytes.len();
                match next() % 4 {
                    0 => bytes[at] = next() as u8,
                    1 => bytes.truncate(at.max(1)),
                    2 => {
                        let piece = bytes[at..].to_vec();
                        bytes.extend_from_slice(&piece);
                    }
                    _ => bytes.insert(at, next() as u8),
                }
            }
            let _ = read(&bytes);
        }
    }
    /// Lists nested `depth` deep two ways: `]` pushed `depth` times then `a` (APPEND)
    /// `depth - 1` times; and `(` MARK `depth` times then `l` (LIST) `depth` times.
    fn nested_lists(depth: usize, by_marks: bool) -> Vec<u8> {
        let mut bytes = vec![0x80, 0x02];
        if by_marks {
            bytes.extend(std::iter::repeat_n(b'(', depth));
            bytes.extend(std::iter::repeat_n(b'l', depth));
        } else {
            bytes.extend(std::iter::repeat_n(b']', depth));
            bytes.extend(std::iter::repeat_n(b'a', depth - 1));
        }
        bytes.push(b'.');
        bytes
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // 200,000 deep overflowed the stack when the value was dropped; now the reader
        // stops at MAX_DEPTH and says so.
        for by_marks in [false, true] {
            let err = read(&nested_lists(200_000, by_marks)).unwrap_err();
            assert!(err.contains("nest more than 128 deep"), "{err}");
        }
        // The limit is exact: MAX_DEPTH levels read, one more is refused.
        for by_marks in [false, true] {
            assert!(read(&nested_lists(MAX_DEPTH as usize, by_marks)).is_ok());
            assert!(read(&nested_lists(MAX_DEPTH as usize + 1, by_marks)).is_err());
        }
        // Depth carried through the memo and DUP: a copy is as deep as its original.
        let mut bytes = nested_lists(MAX_DEPTH as usize, false);
        bytes.pop();
        bytes.extend([b'q', 0, b']', b'h', 0, b'a', b'.']);
        let err = read(&bytes).unwrap_err();
        assert!(err.contains("nest more than"), "{err}");
    }
}
