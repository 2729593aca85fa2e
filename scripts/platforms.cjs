'use strict'
// The platforms rumongo ships a prebuilt addon for: one home for the list that the loader
// (dist/native.cjs), the packaging scripts and the CI workflow's matrix are checked against, and
// for how this machine's platform is told.
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

function libc() {
  // Alpine's /usr/bin/ldd is musl's loader script, glibc's never names musl: read in well under a
  // millisecond, where Node's diagnostic report (glibc's version is in it on glibc systems only)
  // takes ~10 ms. The report is the fallback for images without ldd (distroless). napi-rs and
  // detect-libc test the same two things.
  try {
    return require('node:fs').readFileSync('/usr/bin/ldd', 'latin1').includes('musl') ? 'musl' : 'gnu'
  } catch {
    return process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'
  }
}

/** This machine's platform, as the `triple` of `platforms` names it. */
function currentTriple() {
  const base = `${process.platform}-${process.arch}`
  if (process.platform === 'linux') {
    return `${base}-${libc()}`
  }
  return process.platform === 'win32' ? `${base}-msvc` : base
}

module.exports = { currentTriple, platforms }
