#!/usr/bin/env python3
"""The report pages in a real browser (issue 19): headless Chromium (Debian's `chromium`) opens each kind of page
(and a 512-GPU run's, which must stay under 10 MB) from a file:// URL through the DevTools protocol; the test fails
on any console error, uncaught exception or request (a self-contained page makes none beyond its own file), on a
chart whose canvas has no rendered size, and on a chart whose drawn pixels have a single colour (blank).

Usage: browser_test.py CHOPSIM CONFIGS_DIR DOCS_DIR WORK_DIR
Exit 77 (ctest: skipped) with a message when chromium or python3-websocket is not installed
(scripts/setup-browser.sh installs both; .ci/run does). WORK_DIR is removed after a pass unless
CHOPSIM_KEEP_PAGES=1 (scripts/report-screenshot.sh keeps it for the run page's screenshot).
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77


class Failure(Exception):
    pass


def fail(message):
    raise Failure(message)


def make_pages(chopsim, configs, docs, work):
    """Writes a run, sweep, study and validation page with the chopsim binary; returns {kind: html path}."""
    def run(*args):
        result = subprocess.run([chopsim, *args], capture_output=True, text=True)
        if result.returncode != 0:
            fail("chopsim " + " ".join(args) + " exited " + str(result.returncode) + ": " + result.stderr[-2000:])

    quickstart = os.path.join(configs, "llama3-8b-fsdp.yaml")
    run("run", quickstart, "--configs", configs, "--out", os.path.join(work, "run"), "--report")
    sweep = os.path.join(work, "tiny.sweep.yaml")
    with open(sweep, "w") as f:
        f.write("base: " + quickstart + "\naxes:\n  training.micro_batch: [1, 2]\n  training.recompute: [none, full]\n")
    run("sweep", sweep, "--configs", configs, "--out", os.path.join(work, "sweep"), "--jobs", "2", "--report")
    study = os.path.join(work, "tiny.study.yaml")
    with open(study, "w") as f:
        f.write("sweep: " + sweep + "\ncatalog: " + os.path.join(configs, "studies", "catalog.yaml") +
                "\ngoal: {tokens: 1.0e10}\ncandidates:\n"
                "  - name: 8x MI300X\n    set: {hardware: MI300X, cluster.name: mi300x, cluster.nodes: 1}\n"
                "  - name: 8x H100\n    set: {hardware: H100-SXM5-80GB, cluster.name: dgx-h100, cluster.nodes: 1}\n")
    run("study", study, "--configs", configs, "--out", os.path.join(work, "study"), "--jobs", "2", "--report")
    # A large run: 512 H100 (32 GPUs simulated); its page must stay under 10 MB (telemetry downsampled per GPU).
    large = os.path.join(configs, "..", "bench", "configs", "llama3-70b-512xh100.yaml")
    run("run", large, "--configs", configs, "--out", os.path.join(work, "run512"), "--timeline-ranks", "0", "--report")
    size = os.path.getsize(os.path.join(work, "run512", "report.html"))
    if size >= 10 * 1024 * 1024:
        fail("the 512-GPU run's page is %d bytes, not under 10 MB" % size)
    print("browser test: the 512-GPU run's page is %.1f MB" % (size / 1048576.0))
    validation = os.path.join(work, "validation.csv")
    shutil.copyfile(os.path.join(docs, "validation.csv"), validation)
    run("report", validation)
    return {
        "run": os.path.join(work, "run", "report.html"),
        "512-GPU run": os.path.join(work, "run512", "report.html"),
        "sweep": os.path.join(work, "sweep", "report.html"),
        "study": os.path.join(work, "study", "report.html"),
        "validation": os.path.join(work, "validation.html"),
    }


class Browser:
    """Headless Chromium with the DevTools protocol on a local port."""

    def __init__(self, profile):
        # The flags the machine facts give for a closed network: no background connections, no component updates.
        self.process = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,900",
             "--user-data-dir=" + profile, "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(os.environ, TMPDIR=profile),  # its temporary files stay in the profile, removed with it
            start_new_session=True)  # its own process group: close() ends its helper processes too
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if time.time() > deadline or self.process.poll() is not None:
                self.close()
                fail("chromium did not open its DevTools port within 30 s (exit status " +
                     str(self.process.poll()) + ")")
            time.sleep(0.1)
        with open(port_file) as f:
            port = f.readline().strip()
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:" + port + "/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        import websocket  # python3-websocket
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        # Each call gets the full 30 s (draining events and wait_for shorten the socket's timeout).
        self.socket.settimeout(30)
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    fail(method + ": " + json.dumps(message["error"]))
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.socket.settimeout(max(0.1, deadline - time.time()))
            try:
                self.events.append(json.loads(self.socket.recv()))
            except Exception:  # websocket timeout
                break
        fail("no " + method + " within " + str(timeout) + " s")

    def close(self):
        if getattr(self, "socket", None):
            self.socket.close()
        # The whole group: a network or renderer helper outliving the browser wrote into the profile after it was
        # removed, leaving /tmp/chopsim_chromium_* behind.
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # The helpers end shortly after the browser; wait until none of the group is left.
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


# Per canvas: its rendered size and the number of distinct colours among its drawn pixels (sampled).
CANVASES = """
Array.from(document.querySelectorAll('canvas')).map(c => {
  const box = c.getBoundingClientRect();
  let colours = 0;
  if (c.width > 0 && c.height > 0) {
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < data.length && seen.size < 16; i += 4 * 7)
      seen.add(data[i] + ',' + data[i + 1] + ',' + data[i + 2] + ',' + data[i + 3]);
    colours = seen.size;
  }
  return {id: c.id, width: box.width, height: box.height, colours: colours};
})
"""


SORT_BY_THROUGHPUT = """
(() => {
  const table = document.querySelector('table.sortable');
  if (!table) return false;
  table.querySelectorAll('th')[2].click();
  const values = Array.from(table.querySelectorAll('tr')).slice(1)
      .map(row => parseFloat(row.children[2].textContent)).filter(x => !isNaN(x));
  return values.length > 1 && values.every((x, i) => i === 0 || values[i - 1] <= x);
})()
"""


# The GPU picker: pick a GPU that is not among the ones drawn (or, when all are, the first); the power, clock and
# temperature charts must then show that GPU alone (its dataset first and visible, the drawn GPUs hidden), and the
# first option must bring them back.
PICK_A_GPU = """
(() => {
  const picker = document.getElementById('gpu-picker');
  if (!picker) return 'no picker';
  const drawn = new Set(Chart.getChart('clock').data.datasets.filter(d => d.gpu !== undefined).map(d => d.label));
  // A GPU not drawn if there is one; when every simulated GPU is drawn (few symmetry classes), the first of them.
  const option = Array.from(picker.options).find(o => o.value !== '' && !drawn.has(o.value)) ||
      Array.from(picker.options).find(o => o.value !== '');
  if (!option) return 'no GPU to pick';
  picker.value = option.value;
  picker.dispatchEvent(new Event('change'));
  for (const id of ['power', 'clock', 'temperature']) {
    const sets = Chart.getChart(id).data.datasets;
    if (sets[0].label !== option.value || !sets[0].picked || sets[0].data.length < 2) return id + ': not picked';
    if (sets.some(d => d.gpu !== undefined && !d.hidden)) return id + ': drawn GPUs still shown';
  }
  picker.value = '';
  picker.dispatchEvent(new Event('change'));
  const back = Chart.getChart('clock').data.datasets;
  if (back.some(d => d.picked) || back.some(d => d.gpu !== undefined && d.hidden)) return 'not restored';
  return 'ok ' + option.value + ' of ' + picker.options.length;
})()
"""


def check_page(browser, kind, path):
    browser.events = []
    url = "file://" + os.path.abspath(path)
    browser.call("Page.navigate", url=url)
    browser.wait_for("Page.loadEventFired", 30)
    time.sleep(1.5)  # Chart.js animates for 1 s after load
    result = browser.call("Runtime.evaluate", expression=CANVASES, returnByValue=True)
    canvases = result["result"]["value"]
    # Drain what arrived meanwhile.
    browser.socket.settimeout(0.5)
    try:
        while True:
            browser.events.append(json.loads(browser.socket.recv()))
    except Exception:
        pass
    problems = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            problems.append("uncaught exception: " + json.dumps(params.get("exceptionDetails", {}))[:300])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            problems.append("console error: " + json.dumps(params.get("args", []))[:300])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            problems.append("log error: " + params["entry"].get("text", "")[:300])
        elif method == "Network.requestWillBeSent":
            request_url = params.get("request", {}).get("url", "")
            if request_url != url and not request_url.startswith("data:"):
                problems.append("request for " + request_url)
        elif method == "Network.loadingFailed":
            problems.append("failed request: " + params.get("errorText", ""))
    if not canvases:
        problems.append("no chart")
    for canvas in canvases:
        if canvas["width"] < 10 or canvas["height"] < 10:
            problems.append("chart " + canvas["id"] + " rendered at " + str(canvas["width"]) + " x " +
                            str(canvas["height"]) + " px")
        elif canvas["colours"] < 2:
            problems.append("chart " + canvas["id"] + " is blank (one colour)")
    if kind == "sweep":
        # The table of all points sorts by a column when its heading is clicked (ascending tokens/s).
        sorted_ok = browser.call("Runtime.evaluate", returnByValue=True, expression=SORT_BY_THROUGHPUT)
        if sorted_ok["result"].get("value") is not True:
            problems.append("a click on the tokens/s heading did not sort the table of all points")
    if kind == "512-GPU run":
        picked = browser.call("Runtime.evaluate", returnByValue=True, expression=PICK_A_GPU)["result"].get("value")
        if not str(picked).startswith("ok"):
            problems.append("GPU picker: " + str(picked))
        else:
            print("browser test: the GPU picker showed " + picked[3:] + " options")
    if problems:
        fail(kind + " page (" + path + "): " + "; ".join(problems))
    print("browser test: %s page: %d charts rendered, none blank, no console error, no request" %
          (kind, len(canvases)))
    # The whole page as a PNG beside it (scripts/report-screenshot.sh copies the run page's to docs/img/).
    size = browser.call("Page.getLayoutMetrics")["cssContentSize"]
    screenshot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                              clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
    with open(os.path.splitext(path)[0] + ".png", "wb") as f:
        f.write(base64.b64decode(screenshot["data"]))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    chopsim, configs, docs, work = (os.path.abspath(a) for a in sys.argv[1:])
    if shutil.which("chromium") is None:
        print("browser test: SKIPPED: chromium is not installed (bash scripts/setup-browser.sh installs Debian's "
              "chromium and python3-websocket; .ci/run does)")
        return SKIP
    try:
        import websocket  # noqa: F401
    except ImportError:
        print("browser test: SKIPPED: python3-websocket is not installed (bash scripts/setup-browser.sh)")
        return SKIP
    shutil.rmtree(work, ignore_errors=True)  # a sweep folder left from an earlier run would be resumed
    os.makedirs(work)
    # Chromium's profile and temporary files in a short path of the temporary folder (its singleton socket's path
    # must fit a Unix socket address, 108 bytes), removed at the end.
    profile = tempfile.mkdtemp(prefix="chopsim_chromium_")
    browser = None
    try:
        pages = make_pages(chopsim, configs, docs, work)
        browser = Browser(profile)
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(domain + ".enable")
        for kind, path in pages.items():
            check_page(browser, kind, path)
    except Failure as failure:
        print("browser test: FAILED: " + str(failure) + " (pages kept in " + work + ")")
        return 1
    finally:
        if browser is not None:
            browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    if os.environ.get("CHOPSIM_KEEP_PAGES") != "1":
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
