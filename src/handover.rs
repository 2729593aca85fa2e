//! How bytes made in Rust become JS Buffers and typed arrays.
//!
//! A `Vec` is handed over without a copy, as an external buffer whose finalizer frees it. That
//! is right for large batches, but each external buffer costs V8 a global handle and a finalizer
//! run after it is collected: for a `findOne`, whose batch is a few hundred bytes in three or four
//! buffers, those cost more than copying the bytes. Small outputs are therefore copied into memory
//! V8 owns, and the `Vec` is freed at once.
//!
//! The finalizer of a handed-over `Vec` runs on the JS thread once V8 collected its buffer.
//! Freeing a large one there is costly: glibc returns it to the kernel (`munmap`), which releases
//! every page: a 58 MB Arrow table took 4-18 ms of the JS thread (strace, session 12), a quarter of
//! a whole `findArrow`'s. Large outputs are therefore freed on the rayon pool.
//!
//! JSON text (`findJson`, `pipeJson`) comes back instead: its finalizer keeps a large buffer as a
//! spare that the next batch's text is written into (see `TextBuffer`).

use std::{ffi::c_void, ptr, sync::Mutex};

use napi::{
    bindgen_prelude::{ToNapiValue, TypeName, ValueType},
    check_status, sys,
};

/// Outputs up to this size are copied into a V8-owned buffer instead of handed over.
const COPY_BYTES: usize = 16 * 1024;

/// Bytes that reach JS as a `Buffer`.
pub struct Bytes(pub Vec<u8>);

/// Numbers that reach JS as a `Float64Array`.
pub struct F64s(pub Vec<f64>);

/// Numbers that reach JS as a `Uint32Array`.
pub struct U32s(pub Vec<u32>);

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes(bytes)
    }
}

/// Handed-over outputs of at least this size are freed on the rayon pool, not on the JS thread.
const FREE_ELSEWHERE_BYTES: usize = 1024 * 1024;

/// The finalizer of a handed-over `Vec<T>` (boxed in `hint`): frees it at once if small, else on
/// the rayon pool (see the module's comment).
unsafe extern "C" fn free_handed_over<T: Send + 'static>(
    _env: sys::napi_env,
    _data: *mut c_void,
    hint: *mut c_void,
) {
    // SAFETY: `hint` is the `Box<Vec<T>>` leaked by `hand_over`, given to this finalizer only.
    free(*unsafe { Box::from_raw(hint.cast::<Vec<T>>()) });
}

/// Frees `values` at once if small, else on the rayon pool (see the module's comment).
fn free<T: Send + 'static>(values: Vec<T>) {
    if std::mem::size_of_val(values.as_slice()) >= FREE_ELSEWHERE_BYTES {
        rayon::spawn(move || drop(values));
    }
}

/// JSON text handed over to JS as a `Buffer`, whose memory is written again once V8 collected it.
///
/// A batch's text is written into memory no other batch used before: on glibc, freeing a
/// megabytes-large buffer gives its pages back to the kernel (a thread arena's top is trimmed past
/// `M_TRIM_THRESHOLD`, a block past `M_MMAP_THRESHOLD` is unmapped), and the next batch's text
/// pays a page fault for every 4 KiB it writes: 170-380 faults per MB of BSON in the side-by-side
/// bench (bench/json_anchor.mjs), up to a fifth of a string-heavy batch's time. Large buffers are
/// therefore kept as spares (up to `SPARE_TEXT_LIMIT_BYTES` in all) and handed to the next batches
/// (`text_buffer`), whose text lands in pages already mapped. The spares stay allocated while the
/// process is idle: that is the cost, bounded by the limit.
pub struct TextBuffer(pub Vec<u8>);

/// Text buffers from this capacity on are kept as spares; smaller ones come from the allocator's
/// free lists without page faults. The text of a 128 KiB part of a reply (see batch.rs, the parts
/// a cursor's first reply and small getMores are encoded in) is about this large.
const SPARE_TEXT_MIN_BYTES: usize = 128 * 1024;

/// The most spare text memory kept: two of the largest batches a server sends (16 MiB each), the
/// most a `pipeJson` holds at once (the batch being written and the one read ahead).
const SPARE_TEXT_LIMIT_BYTES: usize = 32 * 1024 * 1024;

/// Spare text buffers (empty, their capacity kept) and their total capacity.
static SPARE_TEXT: Mutex<(Vec<Vec<u8>>, usize)> = Mutex::new((Vec::new(), 0));

/// An empty buffer for at least `capacity` bytes of text: the smallest spare one large enough, if any.
/// Large capacities are rounded up to a multiple of `SPARE_TEXT_MIN_BYTES`, so that buffers asked
/// for by parts of about the same size fit each other's spares.
pub fn text_buffer(capacity: usize) -> Vec<u8> {
    if capacity < SPARE_TEXT_MIN_BYTES {
        return Vec::with_capacity(capacity);
    }
    let capacity = capacity.next_multiple_of(SPARE_TEXT_MIN_BYTES);
    {
        let mut spare = SPARE_TEXT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (buffers, total) = &mut *spare;
        // The smallest that fits: a large spare stays for a large part.
        let fitting = buffers
            .iter()
            .enumerate()
            .filter(|(_, buffer)| buffer.capacity() >= capacity)
            .min_by_key(|(_, buffer)| buffer.capacity());
        if let Some((index, _)) = fitting {
            let buffer = buffers.swap_remove(index);
            *total -= buffer.capacity();
            return buffer;
        }
    }
    Vec::with_capacity(capacity)
}

/// The total capacity of the spare text buffers (for tests).
#[cfg(feature = "test-hooks")]
pub fn spare_text_bytes() -> usize {
    SPARE_TEXT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .1
}

/// Keeps `buffer` as a spare if it is large and the spares have room; frees it otherwise.
fn recycle_text(mut buffer: Vec<u8>) {
    if buffer.capacity() >= SPARE_TEXT_MIN_BYTES {
        let mut spare = SPARE_TEXT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (buffers, total) = &mut *spare;
        if *total + buffer.capacity() <= SPARE_TEXT_LIMIT_BYTES {
            buffer.clear();
            *total += buffer.capacity();
            buffers.push(buffer);
            return;
        }
    }
    free(buffer);
}

/// The finalizer of a handed-over `TextBuffer`'s `Vec` (boxed in `hint`).
unsafe extern "C" fn recycle_handed_over_text(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the `Box<Vec<u8>>` leaked by `hand_over`, given to this finalizer only.
    recycle_text(*unsafe { Box::from_raw(hint.cast::<Vec<u8>>()) });
}

/// The finalizer `hand_over` gives a `Vec<T>`.
type Finalizer = unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void);

/// `values` handed over to JS without a copy: an external `Buffer` (`typed_array: None`), or an
/// external ArrayBuffer viewed by a typed array of that kind; `finalizer` gets the `Vec` back once
/// V8 collected it. Where Node refuses external memory (Electron's sandbox), the values are copied.
unsafe fn hand_over<T: Copy + Send + 'static>(
    env: sys::napi_env,
    values: Vec<T>,
    typed_array: Option<i32>,
    finalizer: Finalizer,
) -> napi::Result<sys::napi_value> {
    let length = std::mem::size_of_val(values.as_slice());
    let data = values.as_ptr().cast_mut().cast::<c_void>();
    // The `Vec` itself moves into the box; its elements stay where `data` points.
    let hint = Box::into_raw(Box::new(values)).cast::<c_void>();
    let mut value = ptr::null_mut();
    let status = unsafe {
        match typed_array {
            None => sys::napi_create_external_buffer(env, length, data, Some(finalizer), hint, &mut value),
            Some(_) => {
                sys::napi_create_external_arraybuffer(env, data, length, Some(finalizer), hint, &mut value)
            }
        }
    };
    if status != sys::Status::napi_ok {
        // SAFETY: on failure Node took neither the memory nor the finalizer.
        let values = unsafe { Box::from_raw(hint.cast::<Vec<T>>()) };
        if status != sys::Status::napi_no_external_buffers_allowed {
            check_status!(status, "Failed to hand a batch buffer over")?;
        }
        let copy = unsafe {
            match typed_array {
                None => copied_buffer(env, &values),
                Some(kind) => copied_typed_array(env, &values, kind),
            }
        };
        // The finalizer's own way of letting the values go (a spare text buffer kept).
        unsafe { finalizer(env, ptr::null_mut(), Box::into_raw(values).cast()) };
        return copy;
    }
    let Some(kind) = typed_array else {
        return Ok(value);
    };
    let mut array = ptr::null_mut();
    check_status!(
        unsafe {
            sys::napi_create_typedarray(env, kind, length / std::mem::size_of::<T>(), value, 0, &mut array)
        },
        "Failed to create a batch array"
    )?;
    Ok(array)
}

/// Copies `values` into a new V8-owned Buffer.
unsafe fn copied_buffer<T: Copy>(env: sys::napi_env, values: &[T]) -> napi::Result<sys::napi_value> {
    let mut buffer = ptr::null_mut();
    check_status!(
        unsafe {
            sys::napi_create_buffer_copy(
                env,
                std::mem::size_of_val(values),
                values.as_ptr().cast(),
                ptr::null_mut(),
                &mut buffer,
            )
        },
        "Failed to copy a batch buffer"
    )?;
    Ok(buffer)
}

impl ToNapiValue for Bytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = val.0;
        match bytes.len() > COPY_BYTES {
            true => unsafe { hand_over(env, bytes, None, free_handed_over::<u8>) },
            false => unsafe { copied_buffer(env, &bytes) },
        }
    }
}

/// Copies `values` into a new V8-owned ArrayBuffer and returns a typed array of `kind` over it.
unsafe fn copied_typed_array<T: Copy>(
    env: sys::napi_env,
    values: &[T],
    kind: i32,
) -> napi::Result<sys::napi_value> {
    let length = std::mem::size_of_val(values);
    let mut data = ptr::null_mut();
    let mut array_buffer = ptr::null_mut();
    check_status!(
        unsafe { sys::napi_create_arraybuffer(env, length, &mut data, &mut array_buffer) },
        "Failed to allocate a batch array"
    )?;
    unsafe { ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), data.cast::<u8>(), length) };
    let mut array = ptr::null_mut();
    check_status!(
        unsafe { sys::napi_create_typedarray(env, kind, values.len(), array_buffer, 0, &mut array) },
        "Failed to create a batch array"
    )?;
    Ok(array)
}

impl ToNapiValue for F64s {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let kind = sys::TypedarrayType::float64_array;
        match std::mem::size_of_val(val.0.as_slice()) > COPY_BYTES {
            true => unsafe { hand_over(env, val.0, Some(kind), free_handed_over::<f64>) },
            false => unsafe { copied_typed_array(env, &val.0, kind) },
        }
    }
}

impl ToNapiValue for U32s {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let kind = sys::TypedarrayType::uint32_array;
        match std::mem::size_of_val(val.0.as_slice()) > COPY_BYTES {
            true => unsafe { hand_over(env, val.0, Some(kind), free_handed_over::<u32>) },
            false => unsafe { copied_typed_array(env, &val.0, kind) },
        }
    }
}

impl TypeName for Bytes {
    fn type_name() -> &'static str {
        "Buffer"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for TextBuffer {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let text = val.0;
        if text.len() <= COPY_BYTES {
            let copy = unsafe { copied_buffer(env, &text) };
            recycle_text(text);
            return copy;
        }
        unsafe { hand_over(env, text, None, recycle_handed_over_text) }
    }
}

impl TypeName for TextBuffer {
    fn type_name() -> &'static str {
        "Buffer"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl TypeName for F64s {
    fn type_name() -> &'static str {
        "Float64Array"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl TypeName for U32s {
    fn type_name() -> &'static str {
        "Uint32Array"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}
