//! How bytes made in Rust become JS Buffers and typed arrays.
//!
//! napi-rs hands a `Vec` over without a copy, as an external buffer whose finalizer frees it. That
//! is right for large batches, but each external buffer costs V8 a global handle and a finalizer
//! run after it is collected: for a `findOne`, whose batch is a few hundred bytes in three or four
//! buffers, those cost more than copying the bytes. Small outputs are therefore copied into memory
//! V8 owns, and the `Vec` is freed at once.

use std::ptr;

use napi::{
    bindgen_prelude::{Buffer, Float64Array, ToNapiValue, TypeName, Uint32Array, ValueType},
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

impl ToNapiValue for Bytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = val.0;
        if bytes.is_empty() || bytes.len() > COPY_BYTES {
            return unsafe { Buffer::to_napi_value(env, bytes.into()) };
        }
        let mut buffer = ptr::null_mut();
        check_status!(
            unsafe {
                sys::napi_create_buffer_copy(
                    env,
                    bytes.len(),
                    bytes.as_ptr().cast(),
                    ptr::null_mut(),
                    &mut buffer,
                )
            },
            "Failed to copy a batch buffer"
        )?;
        Ok(buffer)
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
        if val.0.is_empty() || std::mem::size_of_val(val.0.as_slice()) > COPY_BYTES {
            return unsafe { Float64Array::to_napi_value(env, Float64Array::new(val.0)) };
        }
        unsafe { copied_typed_array(env, &val.0, sys::TypedarrayType::float64_array) }
    }
}

impl ToNapiValue for U32s {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        if val.0.is_empty() || std::mem::size_of_val(val.0.as_slice()) > COPY_BYTES {
            return unsafe { Uint32Array::to_napi_value(env, Uint32Array::new(val.0)) };
        }
        unsafe { copied_typed_array(env, &val.0, sys::TypedarrayType::uint32_array) }
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
