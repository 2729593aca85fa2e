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

use std::{ffi::c_void, ptr};

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
    let values = unsafe { Box::from_raw(hint.cast::<Vec<T>>()) };
    if std::mem::size_of_val(values.as_slice()) >= FREE_ELSEWHERE_BYTES {
        rayon::spawn(move || drop(values));
    }
}

/// `values` handed over to JS without a copy: an external `Buffer` (`typed_array: None`), or an
/// external ArrayBuffer viewed by a typed array of that kind. Where Node refuses external memory
/// (Electron's sandbox), the values are copied.
unsafe fn hand_over<T: Copy + Send + 'static>(
    env: sys::napi_env,
    values: Vec<T>,
    typed_array: Option<i32>,
) -> napi::Result<sys::napi_value> {
    let length = std::mem::size_of_val(values.as_slice());
    let data = values.as_ptr().cast_mut().cast::<c_void>();
    // The `Vec` itself moves into the box; its elements stay where `data` points.
    let hint = Box::into_raw(Box::new(values)).cast::<c_void>();
    let mut value = ptr::null_mut();
    let status = unsafe {
        match typed_array {
            None => sys::napi_create_external_buffer(
                env,
                length,
                data,
                Some(free_handed_over::<T>),
                hint,
                &mut value,
            ),
            Some(_) => sys::napi_create_external_arraybuffer(
                env,
                data,
                length,
                Some(free_handed_over::<T>),
                hint,
                &mut value,
            ),
        }
    };
    if status != sys::Status::napi_ok {
        // SAFETY: on failure Node took neither the memory nor the finalizer.
        let values = unsafe { Box::from_raw(hint.cast::<Vec<T>>()) };
        if status != sys::Status::napi_no_external_buffers_allowed {
            check_status!(status, "Failed to hand a batch buffer over")?;
        }
        return unsafe {
            match typed_array {
                None => copied_buffer(env, &values),
                Some(kind) => copied_typed_array(env, &values, kind),
            }
        };
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
            true => unsafe { hand_over(env, bytes, None) },
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
            true => unsafe { hand_over(env, val.0, Some(kind)) },
            false => unsafe { copied_typed_array(env, &val.0, kind) },
        }
    }
}

impl ToNapiValue for U32s {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let kind = sys::TypedarrayType::uint32_array;
        match std::mem::size_of_val(val.0.as_slice()) > COPY_BYTES {
            true => unsafe { hand_over(env, val.0, Some(kind)) },
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
