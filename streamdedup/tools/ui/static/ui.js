// streamdedup ui: the live list (the newest page re-read every 5 s, the choice kept per browser).
// Plain JavaScript, no build step; the server renders every page.
(function () {
  "use strict";
  var toggle = document.getElementById("live-toggle");
  if (!toggle) return;
  var KEY = "streamdedup.live", timer = null;

  function refresh() {
    fetch(window.location.href, { headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var live = fresh.getElementById("live"), ms = fresh.getElementById("server-ms");
        if (!live) return;
        var keep = document.getElementById("live-toggle").checked;
        document.getElementById("live").replaceWith(live);  // nodes parsed from the server's escaped HTML
        document.getElementById("live-toggle").checked = keep;
        document.getElementById("live-toggle").addEventListener("change", onChange);
        if (ms) document.getElementById("server-ms").textContent = ms.textContent;
      })
      .catch(function () { /* the server is busy or gone: try again at the next tick */ });
  }

  function onChange(ev) {
    var on = ev.target.checked;
    try { localStorage.setItem(KEY, on ? "1" : "0"); } catch (e) { /* private mode */ }
    if (on && !timer) timer = setInterval(refresh, 5000);
    if (!on && timer) { clearInterval(timer); timer = null; }
  }

  toggle.addEventListener("change", onChange);
  var stored = null;
  try { stored = localStorage.getItem(KEY); } catch (e) { /* private mode */ }
  if (stored === "1") { toggle.checked = true; onChange({ target: toggle }); }
})();
