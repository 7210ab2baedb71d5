// The page bob's notebook serves in test_proxy_isolation_browser.py: every way it tries to
// reach the admin's session, each reported as what it got (or the error that stopped it).
const main = MAIN, victim = VICTIM, victimOrigin = VICTIM_ORIGIN, own = OWN;
const out = {};
async function attempt(name, fn) {
  try { out[name] = String(await fn()); } catch (e) { out[name] = "error: " + e.name; }
}
async function body(r) { return r.status + " " + (await r.text()).slice(0, 300); }
function until(check) {  // resolves with check()'s first truthy value
  return new Promise(resolve => {
    const tick = () => { const v = check(); if (v) resolve(v); else requestAnimationFrame(tick); };
    tick();
  });
}
(async () => {
  await attempt("cookie", () => document.cookie);
  await attempt("storage", () => JSON.stringify({...localStorage}));
  await attempt("own_api", async () => body(await fetch(own + "own-api", {credentials: "include"})));
  await attempt("own_ws", () => new Promise(resolve => {
    const ws = new WebSocket(location.origin.replace("http", "ws") + own + "own-ws");
    ws.onmessage = e => { resolve("message " + e.data); ws.close(); };
    ws.onerror = () => resolve("error");
  }));
  await attempt("same_origin_me", async () => body(await fetch("/api/v1/me", {credentials: "include"})));
  await attempt("same_origin_users_me", async () => body(await fetch("/api/v1/users/me")));
  await attempt("same_origin_det", async () => body(await fetch("/det/")));
  await attempt("main_me", async () => body(await fetch(main + "/api/v1/me", {credentials: "include"})));
  await attempt("main_users_me", async () =>
    body(await fetch(main + "/api/v1/users/me", {credentials: "include"})));
  await attempt("main_write", async () => (await fetch(main + "/api/v1/users", {
    method: "POST", credentials: "include", mode: "no-cors", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({user: {username: "mallory", admin: true, active: true}, password: "Pw-123456"}),
  })).type);
  await attempt("main_form_write", () => new Promise(resolve => {
    const frame = document.createElement("iframe"); frame.name = "sink"; document.body.appendChild(frame);
    const form = document.createElement("form");
    form.method = "POST"; form.action = main + "/api/v1/users"; form.target = "sink";
    form.enctype = "text/plain";
    const field = document.createElement("input");
    field.name = '{"user":{"username":"mallory2","admin":true,"active":true},"password":"Pw-123456","x":"';
    field.value = '"}';
    form.appendChild(field); document.body.appendChild(form);
    frame.onload = () => resolve("submitted"); form.submit();
  }));
  await attempt("iframe_det", () => new Promise(resolve => {
    const frame = document.createElement("iframe");
    frame.onload = () => {
      try { resolve("read: " + frame.contentWindow.document.documentElement.outerHTML.slice(0, 200)
                    + " token=" + frame.contentWindow.localStorage.getItem("resolute.token")); }
      catch (e) { resolve("error: " + e.name); }
    };
    frame.src = main + "/det/"; document.body.appendChild(frame);
  }));
  await attempt("window_det", async () => {
    const w = window.open(main + "/det/");
    if (!w) return "no window";
    // until the window has left its initial about:blank (then it is /det/'s, or unreadable)
    const got = await until(() => {
      try { return w.location.href.startsWith(main) ? "read: " + w.document.cookie : null; }
      catch (e) { return "error: " + e.name; }
    });
    w.close();
    return got;
  });
  await attempt("victim_via_main", async () =>
    body(await fetch(main + "/proxy/" + victim + "/attack-main", {credentials: "include"})));
  await attempt("victim_origin", async () =>
    body(await fetch(victimOrigin + "/proxy/" + victim + "/attack-origin", {credentials: "include"})));
  await attempt("victim_post", async () => (await fetch(victimOrigin + "/proxy/" + victim + "/attack-post", {
    method: "POST", credentials: "include", mode: "no-cors", body: "x"})).type);
  await attempt("victim_ws", () => new Promise(resolve => {
    const ws = new WebSocket(victimOrigin.replace("http", "ws") + "/proxy/" + victim + "/attack-ws");
    ws.onopen = () => resolve("open"); ws.onerror = () => resolve("error");
  }));
  document.getElementById("out").textContent = JSON.stringify(out);
})();
