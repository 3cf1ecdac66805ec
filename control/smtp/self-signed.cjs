// Generates the self-signed STARTTLS pair on a worker thread for control/smtp/tls.ts: selfsigned
// and its X.509/ASN.1 stack take about 7 MB of heap, which go away with the worker instead of
// staying in control for good. Plain CommonJS, copied as it is into the build.
const { parentPort, workerData } = require('node:worker_threads');

import('selfsigned')
  .then(({ generate }) => generate(workerData.attributes, workerData.options))
  .then(
    (pair) => parentPort.postMessage({ key: pair.private, cert: pair.cert }),
    (err) => parentPort.postMessage({ error: String(err?.message ?? err) }),
  );
