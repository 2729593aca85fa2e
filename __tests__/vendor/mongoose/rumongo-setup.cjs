'use strict'
// rumongo's own file (not Mongoose's): mocha `--require`d before the vendored tests load.
// - MONGOOSE_TEST_URI: the server the tests use (test/common.js reads it);
// - RUMONGO_MONGOOSE_PLUGIN=1: installs rumongo's plugin globally on this Mongoose before any model
//   is compiled, the one line an application adds;
// - RUMONGO_MONGOOSE_STATS=<file>: where the plugin's stats() are written when the run ends.
const { writeFileSync } = require('node:fs')
const { join } = require('node:path')

if (!process.env.MONGOOSE_TEST_URI) throw new Error('set MONGOOSE_TEST_URI to the server to test on')

const mongoose = require('./index')

let plugin
if (process.env.RUMONGO_MONGOOSE_PLUGIN === '1') {
  const { mongoosePlugin } = require(join(__dirname, '..', '..', '..', 'dist', 'index.js'))
  plugin = mongoosePlugin()
  mongoose.plugin(plugin)
}

/**
 * Mongoose's global options and each connection's, as a test found them. A test that sets one
 * resets it on its last line; one that fails before that line (on this server: query.test.js's
 * "connection-level" and "mongoose-level maxTimeMS() (gh-4066)" set maxTimeMS: 10, then fail on
 * `$where`) would leave it set for every later test of the run: a 10 ms limit on every query and
 * findOneAndUpdate, which a loaded machine exceeds now and then (FerretDB's "operation exceeded
 * time limit", "context deadline exceeded"), failing unrelated tests at random.
 */
let optionsBefore
const copy = (options) => (options == null ? options : { ...options })
const options = () => [mongoose, ...mongoose.connections].map((owner) => [owner, copy(owner.options)])

/** Puts `owner.options` back as `saved` (the same object, which Mongoose may hold elsewhere). */
function restore(owner, saved) {
  if (saved == null || owner.options == null) {
    owner.options = saved
    return
  }
  for (const key of Object.keys(owner.options)) if (!(key in saved)) delete owner.options[key]
  Object.assign(owner.options, saved)
}

exports.mochaHooks = {
  beforeEach() {
    optionsBefore = options()
  },
  afterEach() {
    // Only after a failed test: one that passed ran its own reset.
    if (this.currentTest?.state === 'failed')
      for (const [owner, saved] of optionsBefore) restore(owner, saved)
  },
  afterAll() {
    if (plugin && process.env.RUMONGO_MONGOOSE_STATS) {
      writeFileSync(process.env.RUMONGO_MONGOOSE_STATS, JSON.stringify(plugin.stats()))
    }
  },
}
