// BENCH_PROFILE=<dir>: preloaded into the stack's processes (NODE_OPTIONS --require) to write
// CPU profiles (--cpu-prof itself is not allowed in NODE_OPTIONS). Without BENCH_PROFILE_SIGNAL
// the profile covers the whole life of the process, written when it exits; with it, SIGUSR2
// starts a profile and the next SIGUSR2 writes it, so a bench profiles one measurement only.
const dir = process.env.BENCH_PROFILE;
if (dir) {
  const inspector = require('node:inspector');
  const fs = require('node:fs');
  const path = require('node:path');
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  const name = path.basename(process.argv[process.argv.length - 1] || 'node');
  let running = false;
  let n = 0;
  const start = () => {
    running = true;
    session.post('Profiler.start');
  };
  // An in-thread session answers synchronously, so this completes before the process ends.
  const stop = () => {
    running = false;
    session.post('Profiler.stop', (err, res) => {
      if (!err) fs.writeFileSync(path.join(dir, `${name}-${process.pid}-${n++}.cpuprofile`), JSON.stringify(res.profile));
    });
  };
  if (process.env.BENCH_PROFILE_SIGNAL) process.on('SIGUSR2', () => (running ? stop() : start()));
  else start();
  process.on('exit', () => running && stop());
}
