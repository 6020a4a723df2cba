// A real browser for the e2e tests: Debian's chromium (scripts/test.sh installs it with
// SANDBOX_WITH_BROWSER=1), driven headless by puppeteer-core. puppeteer-core, unlike puppeteer,
// never downloads a browser of its own: this machine reaches only Debian's mirror and npm.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

// Debian's launcher script: it execs /usr/lib/chromium/chromium with the flags from
// /etc/chromium.d (e.g. --disable-dev-shm-usage when /dev/shm is small, as in many containers).
export const CHROMIUM_PATH = '/usr/bin/chromium';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Where tests put screenshots: SANDBOX_TEST_OUTPUT_DIR, else build/test-output/e2e in the
// repository (build/ is not tracked). Created on demand; kept after the run for a look.
export function screenshotDir() {
  const dir = process.env.SANDBOX_TEST_OUTPUT_DIR ??
    path.join(REPO_ROOT, 'build', 'test-output', 'e2e');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// A headless Chromium with a fresh profile in a temporary directory, removed by browser.close().
// Throws (never skips) when chromium is not installed.
export async function launchBrowser() {
  try {
    fs.accessSync(CHROMIUM_PATH, fs.constants.X_OK);
  } catch {
    throw new Error(`no browser at ${CHROMIUM_PATH}: install the Debian package chromium ` +
      '(apt-get install chromium, or SANDBOX_WITH_BROWSER=1 scripts/setup.sh; scripts/test.sh does it)');
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-chromium-'));
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      userDataDir,
      // DevTools over a pipe rather than a TCP port: nothing else on the machine can attach.
      pipe: true,
      args: [
        // Chromium refuses to start as root with its sandbox on (and the test runs as root). We
        // turn its sandbox off only because this browser loads nothing but pages the test itself
        // serves (from sandbox code it wrote, or its own local servers), never the open web.
        '--no-sandbox',
        // No GPU here: software rendering from the start, without probing for one.
        '--disable-gpu',
        '--no-first-run',
        '--no-default-browser-check',
      ],
    });
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  // The profile goes once the browser is gone (puppeteer removes only profiles it made itself).
  const close = browser.close.bind(browser);
  browser.close = async () => {
    try {
      await close();
    } finally {
      fs.rmSync(userDataDir, { recursive: true, force: true });
    }
  };
  return browser;
}

// Runs fn(page, browser) in a fresh browser and closes it afterwards, whatever fn does. Errors
// thrown by the page's scripts are printed, so a failing test shows why the page got stuck.
export async function withPage(fn) {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    page.on('pageerror', (err) => console.error(`[browser] page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') console.error(`[browser] console: ${msg.text()}`);
    });
    return await fn(page, browser);
  } finally {
    await browser.close();
  }
}
