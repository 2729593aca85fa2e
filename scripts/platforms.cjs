'use strict'
// The platforms rumongo ships a prebuilt addon for: one home for the list that the loader
// (dist/native.cjs), the packaging script and the CI workflow's matrix are checked against.
// `triple` is napi-rs's platform name (the npm/<triple>/ folder, the `rumongo-<triple>` package and
// the `rumongo.<triple>.node` file); `rust` is the cargo target it is built from (zig's `.2.17`
// suffix pins the glibc baseline of the gnu targets).

/** @type {ReadonlyArray<{ triple: string, rust: string, os: string, cpu: string, libc?: string, runtime: string }>} */
const platforms = [
  {
    triple: 'linux-x64-gnu',
    rust: 'x86_64-unknown-linux-gnu.2.17',
    os: 'linux',
    cpu: 'x64',
    libc: 'glibc',
    runtime: 'glibc >= 2.17',
  },
  {
    triple: 'linux-x64-musl',
    rust: 'x86_64-unknown-linux-musl',
    os: 'linux',
    cpu: 'x64',
    libc: 'musl',
    runtime: 'musl >= 1.2 (Alpine 3.15+)',
  },
  {
    triple: 'linux-arm64-gnu',
    rust: 'aarch64-unknown-linux-gnu.2.17',
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
    runtime: 'glibc >= 2.17',
  },
  {
    triple: 'linux-arm64-musl',
    rust: 'aarch64-unknown-linux-musl',
    os: 'linux',
    cpu: 'arm64',
    libc: 'musl',
    runtime: 'musl >= 1.2 (Alpine 3.15+)',
  },
  { triple: 'darwin-x64', rust: 'x86_64-apple-darwin', os: 'darwin', cpu: 'x64', runtime: 'macOS >= 10.15' },
  {
    triple: 'darwin-arm64',
    rust: 'aarch64-apple-darwin',
    os: 'darwin',
    cpu: 'arm64',
    runtime: 'macOS >= 11',
  },
  {
    triple: 'win32-x64-msvc',
    rust: 'x86_64-pc-windows-msvc',
    os: 'win32',
    cpu: 'x64',
    runtime: 'Windows 10+',
  },
]

module.exports = { platforms }
