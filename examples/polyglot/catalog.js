// catalog: the polyglot example's item list, in Node.js (no packages).
// GET /items costs WORK_US microseconds of CPU and returns the items.
'use strict';
const http = require('http');

const port = Number(process.env.PORT || 19081);
const workUS = Number(process.env.WORK_US || 150);
const items = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i, name: `item-${i}` })));

// spin burns us microseconds of the process's CPU time (not wall time: a
// stopped process must not catch up after it is continued).
function spin(us) {
  const start = process.cpuUsage();
  for (;;) {
    const d = process.cpuUsage(start);
    if (d.user + d.system >= us) return;
  }
}

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.end('ok\n');
    return;
  }
  spin(workUS);
  res.setHeader('Content-Type', 'application/json');
  res.end(items);
});
server.keepAliveTimeout = 60000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
