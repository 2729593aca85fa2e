'use strict'
// rumongo's own file (not Mongoose's): mocha `--require`d before the vendored tests load.
// - MONGOOSE_TEST_URI: the server the tests use (test/common.js reads it);
// - RUMONGO_MONGOOSE_PLUGIN=1: installs rumongo's plugin globally on this Mongoose before any model
//   is compiled, the one line an application adds;
// - RUMONGO_MONGOOSE_STATS=<file>: where the plugin's stats() are written when the run ends.
const { writeFileSync } = require('node:fs')
const { join } = require('node:path')

if (!process.env.MONGOOSE_TEST_URI) throw new Error('set MONGOOSE_TEST_URI to the server to test on')

let plugin
if (process.env.RUMONGO_MONGOOSE_PLUGIN === '1') {
  const { mongoosePlugin } = require(join(__dirname, '..', '..', '..', 'dist', 'index.js'))
  plugin = mongoosePlugin()
  require('./index').plugin(plugin)
}

exports.mochaHooks = {
  afterAll() {
    if (plugin && process.env.RUMONGO_MONGOOSE_STATS) {
      writeFileSync(process.env.RUMONGO_MONGOOSE_STATS, JSON.stringify(plugin.stats()))
    }
  },
}
