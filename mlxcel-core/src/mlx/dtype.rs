//! Element types. The numeric codes cross the bridge and must match `to_dtype` /
//! `from_dtype` in `cpp/bridge.cc`.

use half::{bf16, f16};

/// An MLX element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dtype {
    Bool = 0,
    U8 = 1,
    U16 = 2,
    U32 = 3,
    U64 = 4,
    I8 = 5,
    I16 = 6,
    I32 = 7,
    I64 = 8,
    F16 = 9,
    F32 = 10,
    F64 = 11,
    BF16 = 12,
    Complex64 = 13,
}

impl Dtype {
    pub(crate) fn from_code(code: u8) -> Option<Dtype> {
        use Dtype::*;
        Some(match code {
            0 => Bool,
            1 => U8,
            2 => U16,
            3 => U32,
            4 => U64,
            5 => I8,
            6 => I16,
            7 => I32,
            8 => I64,
            9 => F16,
            10 => F32,
            11 => F64,
            12 => BF16,
            13 => Complex64,
            _ => return None,
        })
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        use Dtype::*;
        match self {
            Bool | U8 | I8 => 1,
            U16 | I16 | F16 | BF16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | Complex64 => 8,
        }
    }

    /// True for the floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::F32 | Dtype::F64 | Dtype::BF16)
    }

    /// The name MLX and NumPy use (`float16`, `bfloat16`, ...).
    pub fn name(self) -> &'static str {
        use Dtype::*;
        match self {
            Bool => "bool",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            I8 => "int8",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            F16 => "float16",
            F32 => "float32",
            F64 => "float64",
            BF16 => "bfloat16",
            Complex64 => "complex64",
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that is laid out exactly like one MLX element.
///
/// # Safety
/// Implementors must be plain-old-data of size `DTYPE.size()` with every bit pattern
/// MLX can produce being a valid value (true for the types below; `bool` is only ever
/// written by MLX as 0 or 1).
pub unsafe trait Element: Copy + Default + 'static {
    const DTYPE: Dtype;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(unsafe impl Element for $t { const DTYPE: Dtype = Dtype::$d; })*
    };
}

element!(
    bool => Bool, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f16 => F16, f32 => F32, f64 => F64, bf16 => BF16,
);

pub(crate) fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: Element types are POD without padding.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

pub(crate) fn as_bytes_mut<T: Element>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; MLX writes only valid values of the array's own dtype, which the
    // caller checked equals T::DTYPE.
    unsafe {
        std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data))
    }
}
