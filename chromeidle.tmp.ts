import { chromium } from 'playwright-core';
import { readFileSync, readdirSync } from 'node:fs';
import { startDemo } from '/work/main/demo/demo.js';
import { freshDataDir } from '/work/main/test/helpers/embedded-store.js';
function chromeCpu(): number {
  let t = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes('chrom')) continue;
      const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
      t += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return t / 100;
}
const dir = await freshDataDir();
const demo = await startDemo({ port: 0, dataDir: dir.path, logLevel: 'error', prettyLogs: false, emulatorLatencyMs: 2000 });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', ...(process.argv[2] ? process.argv[2].split(' ') : [])] });
const c0 = chromeCpu();
const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
await page.goto(demo.url);
await new Promise((r) => setTimeout(r, 3000));
const c1 = chromeCpu();
await new Promise((r) => setTimeout(r, 10000));
const c2 = chromeCpu();
console.log('launch+load', (c1 - c0).toFixed(2), 'idle 10s', (c2 - c1).toFixed(2));
await browser.close(); await demo.stop(); await dir.remove();
