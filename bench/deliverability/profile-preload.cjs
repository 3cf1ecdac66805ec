// BENCH_PROFILE: preloaded into the stack's processes (NODE_OPTIONS --require) to write a
// CPU profile of each when it exits (--cpu-prof itself is not allowed in NODE_OPTIONS).
const dir = process.env.BENCH_PROFILE;
if (dir) {
  const inspector = require('node:inspector');
  const fs = require('node:fs');
  const path = require('node:path');
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  process.on('exit', () => {
    // An in-thread session answers synchronously, so this completes before the process ends.
    session.post('Profiler.stop', (err, res) => {
      if (!err)
        fs.writeFileSync(
          path.join(dir, `${path.basename(process.argv[process.argv.length - 1] || 'node')}-${process.pid}.cpuprofile`),
          JSON.stringify(res.profile),
        );
    });
  });
}
