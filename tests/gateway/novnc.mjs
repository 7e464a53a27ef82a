// A real noVNC client (the @novnc/novnc package) in headless Chromium,
// driven by playwright-core, for the gateway's tests and benchmarks.
//
//   node novnc.mjs URL [--pixel X,Y]... [--click X,Y] [--wait-pixel X,Y=R,G,B]
//
// Opens a page that connects noVNC's RFB to URL (ws://127.0.0.1:PORT/...),
// with noVNC's own viewOnly off, so a view capability's refusal of input is
// the gateway's doing. Prints one JSON line: {connected, width, height,
// pixels: {"X,Y": [R,G,B]}, clicked, disconnect_reason, security_failure}
// (security_failure: the reason a server gave for serving no desktop). --wait-pixel polls
// the client's framebuffer until a pixel has the given colour (first
// frames, or a click's effect) before reading the rest; --click clicks the
// client's canvas at framebuffer point X,Y (mouse down and up).
// The page is served from the package's files by request interception under
// the gateway's own origin (loopback: a secure context, and no local network
// access check), so nothing but the gateway is ever contacted.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeDir = process.env.RAKAZO_NODE_DIR || path.join(here, "../../build/node");
const { chromium } = await import(path.join(nodeDir, "node_modules/playwright-core/index.mjs"));
const novncDir = path.join(nodeDir, "node_modules/@novnc/novnc");

const args = process.argv.slice(2);
const url = args.shift();
const pixels = [], waits = [];
let click = null;
while (args.length) {
  const a = args.shift();
  if (a === "--pixel") pixels.push(args.shift().split(",").map(Number));
  else if (a === "--click") click = args.shift().split(",").map(Number);
  else if (a === "--wait-pixel") {
    const [xy, rgb] = args.shift().split("=");
    waits.push({ xy: xy.split(",").map(Number), rgb: rgb.split(",").map(Number) });
  } else {
    console.error("novnc.mjs: unknown argument " + a);
    process.exit(2);
  }
}
if (!/^wss?:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(url || "")) {
  console.error("novnc.mjs: a ws:// URL on loopback is required");
  process.exit(2);
}

const page_html = `<!doctype html><html><body style="margin:0">
<div id="screen" style="width:1280px;height:800px"></div>
<script type="module">
import RFB from "/__rakazo_test__/novnc/core/rfb.js";
window.state = { connected: false, disconnect_reason: null, security_failure: null };
const rfb = new RFB(document.getElementById("screen"), ${JSON.stringify(url)}, { shared: true });
rfb.viewOnly = false;
rfb.scaleViewport = false;
rfb.addEventListener("connect", () => { window.state.connected = true; });
rfb.addEventListener("securityfailure", (e) => { window.state.security_failure = e.detail.reason || String(e.detail.status); });
rfb.addEventListener("disconnect", (e) => {
  window.state.disconnect_reason = e.detail.clean ? "clean" : "unclean";
});
window.rfb = rfb;
window.pixel = (x, y) => {
  const c = document.querySelector("#screen canvas");
  if (!c || c.width <= x || c.height <= y) return null;
  return Array.from(c.getContext("2d").getImageData(x, y, 1, 1).data.slice(0, 3));
};
window.size = () => {
  const c = document.querySelector("#screen canvas");
  return c ? [c.width, c.height] : [0, 0];
};
</script></body></html>`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost", "--disable-background-networking", "--disable-features=LocalNetworkAccessChecks,LocalNetworkAccessChecksWebSockets"],
});
const out = { connected: false, width: 0, height: 0, pixels: {}, clicked: false, disconnect_reason: null, security_failure: null };
let code = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const origin = url.replace(/^ws(s?):\/\/([^/]+).*$/, "http$1://$2");
  await page.route(origin + "/__rakazo_test__/**", async (route) => {
    const u = new URL(route.request().url());
    u.pathname = u.pathname.replace(/^\/__rakazo_test__/, "");
    if (u.pathname === "/index.html") return route.fulfill({ contentType: "text/html", body: page_html });
    const rel = path.normalize(u.pathname.replace(/^\/novnc\//, ""));
    if (!u.pathname.startsWith("/novnc/") || rel.startsWith("..")) return route.fulfill({ status: 404, body: "" });
    try {
      const body = await readFile(path.join(novncDir, rel));
      return route.fulfill({ contentType: "text/javascript", body });
    } catch {
      return route.fulfill({ status: 404, body: "" });
    }
  });
  if (process.env.NOVNC_DEBUG) page.on("console", (m) => console.error("page: " + m.text()));
  await page.goto(origin + "/__rakazo_test__/index.html");
  const deadline = Date.now() + 30000;
  const until = async (fn) => {
    while (Date.now() < deadline) {
      if (await fn()) return true;
      await page.waitForTimeout(50);
    }
    return false;
  };
  await until(() => page.evaluate(() => window.state && (window.state.connected || window.state.disconnect_reason)));
  Object.assign(out, await page.evaluate(() => window.state));
  if (out.connected) {
    // the first frame: the canvas has the desktop's size and some non-black pixel
    await until(async () => {
      const [w, h] = await page.evaluate(() => window.size());
      if (w < 64) return false;
      const p = await page.evaluate(() => window.pixel(Math.floor(window.size()[0] / 2), Math.floor(window.size()[1] / 2)));
      return p && (p[0] || p[1] || p[2]);
    });
    if (click) {
      const box = await page.locator("#screen canvas").boundingBox();
      await page.mouse.move(box.x + click[0], box.y + click[1]);
      await page.mouse.down();
      await page.mouse.up();
      out.clicked = true;
    }
    for (const w of waits) {
      await until(async () => {
        const p = await page.evaluate(([x, y]) => window.pixel(x, y), w.xy);
        return p && p.every((v, i) => Math.abs(v - w.rgb[i]) <= 8);
      });
    }
    [out.width, out.height] = await page.evaluate(() => window.size());
    for (const [x, y] of [...pixels, ...waits.map((w) => w.xy)])
      out.pixels[`${x},${y}`] = await page.evaluate(([px, py]) => window.pixel(px, py), [x, y]);
    out.disconnect_reason = await page.evaluate(() => window.state.disconnect_reason);
  }
} catch (e) {
  console.error("novnc.mjs: " + e.message);
  code = 1;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(code);
