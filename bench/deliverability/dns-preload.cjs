// Preloaded into the vanilla Haraka process: its DNS (the reverse lookup of each client)
// goes to the benchmark's loopback DNS server, as our gateway's does, instead of a
// resolver this machine may not reach. Haraka's code and plugins stay as shipped.
if (process.env.BENCH_DNS) require('node:dns').setServers([process.env.BENCH_DNS]);
