#!/usr/bin/env python3
"""Loads an HTML report in headless Chromium through the DevTools protocol (--remote-debugging-pipe:
no port is opened), takes a screenshot, and prints what the page shows as one JSON object:

  facts             what the page's DOM holds after load (group rows, histogram bars, thumbnails
                    with the size the browser decoded them at, whether sorting by count sorts,
                    the text of each item under the Warnings heading, who holds each group
                    and each listed buffer; on the fleet page the
                    links to the dumps' pages, the trend charts' bars by version, the outcomes
                    of the dumps not ok, the groups every dump since their first version holds)
  console_errors    console errors, uncaught exceptions and browser log errors (CSP violations)
  requests          every request the page made for something that is not a data: URI

Usage: browser_check.py CHROMIUM PAGE.html SCREENSHOT.png PROFILE_DIR
"""
import base64
import fcntl
import json
import os
import subprocess
import sys
import time

FACTS = r"""(() => {
  const rows = [...document.querySelectorAll('#groups tbody tr')];
  const images = [...document.querySelectorAll('img.thumb')].map(img => ({
    buffer: img.closest('tr') ? img.closest('tr').id : '',
    group_size: img.closest('details') ? Number(img.closest('details').dataset.size) : 0,
    natural_width: img.naturalWidth, natural_height: img.naturalHeight}));
  const countHeader = document.querySelectorAll('#groups thead th')[3];
  if (countHeader) countHeader.click();
  const counts = [...document.querySelectorAll('#groups tbody tr')].map(r => Number(r.cells[3].dataset.v));
  const sorted = counts.every((c, i) => i === 0 || counts[i - 1] <= c);
  if (countHeader) countHeader.click();
  const warningsHeading = [...document.querySelectorAll('h2')].find(h => h.textContent === 'Warnings');
  const warnings = warningsHeading && warningsHeading.nextElementSibling
    ? [...warningsHeading.nextElementSibling.querySelectorAll('li')].map(li => li.textContent) : [];
  return JSON.stringify({
    title: document.title,
    group_rows: rows.length,
    group_sections: document.querySelectorAll('details[id^=g]').length,
    histogram_bars: document.querySelectorAll('#histogram rect.bar').length,
    kind_segments: document.querySelectorAll('#kinds rect').length,
    findings: document.querySelectorAll('ol.findings > li').length,
    scripts: document.scripts.length,
    copy_links: [...document.querySelectorAll('a.copy')].map(a => a.closest('tr').id),
    images: images,
    sorted_by_count: sorted && counts.length === rows.length,
    filter_shown: !!document.getElementById('filter') && !document.getElementById('filter').hidden,
    warnings: warnings,
    dump_links: [...document.querySelectorAll('a.dump')].map(a => a.getAttribute('href')),
    trend_charts: document.querySelectorAll('svg.trend').length,
    trend_bars: [...document.querySelectorAll('svg.trend rect.bar')].map(r => r.dataset.version),
    not_ok: [...document.querySelectorAll('#not-ok tbody tr')].map(r => r.dataset.outcome),
    every_dump_groups: document.querySelectorAll('#groups tbody tr[data-every=yes]').length,
    group_holders: [...document.querySelectorAll('details[id^=g] > p.holders')].map(p => ({
      group_size: Number(p.closest('details').dataset.size), text: p.textContent})),
    buffer_holders: [...document.querySelectorAll('td.holders')].map(td => ({
      buffer: td.closest('tr').id, text: td.textContent})),
  });
})()"""


def main():
    chromium, page, screenshot, profile = sys.argv[1:5]
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    # Chromium reads commands on fd 3 and writes replies on fd 4.
    child_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
    child_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)

    def place_fds():
        os.dup2(child_r, 3)
        os.dup2(child_w, 4)

    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-extensions", "--hide-scrollbars",
            "--user-data-dir=" + profile, "--remote-debugging-pipe", "about:blank"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=place_fds, pass_fds=(3, 4))
    for fd in (to_chrome_r, from_chrome_w, child_r, child_w):
        os.close(fd)
    out = os.fdopen(to_chrome_w, "wb", buffering=0)
    inp = os.fdopen(from_chrome_r, "rb", buffering=0)
    pending = b""
    events = []
    next_id = [0]
    deadline = time.time() + 60

    def read_message():
        nonlocal pending
        while b"\0" not in pending:
            if time.time() > deadline:
                raise TimeoutError("no reply from chromium within 60 s")
            chunk = inp.read(65536)
            if not chunk:
                raise EOFError("chromium closed the DevTools pipe")
            pending += chunk
        message, pending = pending.split(b"\0", 1)
        return json.loads(message)

    def send(method, params=None, session=None):
        next_id[0] += 1
        message = {"id": next_id[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        out.write(json.dumps(message).encode() + b"\0")
        while True:
            reply = read_message()
            if reply.get("id") == next_id[0]:
                if "error" in reply:
                    raise RuntimeError(method + ": " + json.dumps(reply["error"]))
                return reply.get("result", {})
            events.append(reply)

    def wait_for(method):
        for event in events:
            if event.get("method") == method:
                return
        while True:
            event = read_message()
            events.append(event)
            if event.get("method") == method:
                return

    try:
        target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            send(domain + ".enable", session=session)
        send("Emulation.setDeviceMetricsOverride",
             {"width": 1280, "height": 1400, "deviceScaleFactor": 1, "mobile": False},
             session=session)
        events.clear()
        send("Page.navigate", {"url": "file://" + os.path.abspath(page)}, session=session)
        wait_for("Page.loadEventFired")
        facts = send("Runtime.evaluate", {"expression": FACTS, "returnByValue": True},
                     session=session)
        if "exceptionDetails" in facts:
            raise RuntimeError("the check's script failed: " + json.dumps(facts["exceptionDetails"]))
        # The screenshot holds the whole page, up to 2,400 pixels down.
        size = send("Page.getLayoutMetrics", session=session)["cssContentSize"]
        send("Emulation.setDeviceMetricsOverride",
             {"width": 1280, "height": min(2400, int(size["height"])), "deviceScaleFactor": 1,
              "mobile": False}, session=session)
        shot = send("Page.captureScreenshot", {"format": "png"}, session=session)
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        # Events that arrived while the screenshot was taken count too.
        send("Runtime.evaluate", {"expression": "1"}, session=session)
    finally:
        try:
            out.write(json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    errors, requests = [], []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console: " + json.dumps(params.get("args")))
        elif method == "Runtime.exceptionThrown":
            errors.append("exception: " + json.dumps(params.get("exceptionDetails")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append("log: " + params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith("data:"):
                requests.append(url)
    print(json.dumps({"facts": json.loads(facts["result"]["value"]), "console_errors": errors,
                      "requests": requests}))


if __name__ == "__main__":
    main()
