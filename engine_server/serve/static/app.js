// The page talks to its engine session over one WebSocket (docs/web.md): every message is a
// JSON object; the server's "state" message is the only source of the board, so the page never
// shows a move the engine has not accepted.
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const $$ = (sel) => Array.from(document.querySelectorAll(sel));
  const FILES = "abcdefgh";
  const NAMES = { black: "Black", white: "White" };

  let ws = null;
  let welcome = null;       // agents, presets, limits, defaults
  let state = null;         // the last "state" message
  let hints = null;         // {ply, moves} of the last hint, shown until the position changes
  let nextId = 1;
  let errorTimer = null;
  let progressStart = 0;
  // The game's token: kept in sessionStorage, so that a reload of this tab (or a connection
  // that drops) comes back to the same game; other tabs have their own.
  const TOKEN_KEY = "othello-session";
  let restorePending = false; // a resumed game: set the controls from its first state
  let fatal = false;          // the server closed this page's game: no reconnecting
  let retries = 0;

  // --- board ----------------------------------------------------------------------------
  const board = $('[data-role="board"]');
  const squares = [];
  for (let i = 0; i < 64; i++) {
    const sq = document.createElement("button");
    sq.type = "button";
    sq.className = "sq";
    const name = FILES[i % 8] + String(Math.floor(i / 8) + 1);
    sq.dataset.square = name;
    sq.setAttribute("aria-label", name);
    sq.tabIndex = -1;
    const disc = document.createElement("span");
    disc.className = "disc";
    disc.hidden = true;
    sq.appendChild(disc);
    sq.addEventListener("click", () => onSquare(name));
    board.appendChild(sq);
    squares.push(sq);
  }

  function onSquare(name) {
    const sq = squares[index(name)];
    if (!state || sq.dataset.legal !== "true") return;
    setPhase("waiting");   // until the server's state arrives: no second click on an old board
    send({ type: "move", square: name });
  }

  function index(name) {
    return FILES.indexOf(name[0]) + 8 * (Number(name[1]) - 1);
  }

  // --- connection -----------------------------------------------------------------------
  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (e) {
      return "";   // storage disabled: every connection is a new game
    }
  }

  function storeToken(token) {
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch (e) {
      // storage disabled: nothing to keep
    }
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const token = storedToken();
    const query = token ? `?session=${encodeURIComponent(token)}` : "";
    ws = new WebSocket(`${proto}//${location.host}/ws${query}`);
    setPhase("connecting");
    status(retries ? "Connection lost; reconnecting…" : "Connecting…");
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        showError("the server sent something that is not JSON");
        return;
      }
      handle(msg);
    };
    ws.onclose = (ev) => {
      $$("button[data-action]").forEach((b) => { b.disabled = true; });
      // 1013: server full; 4000: the game was opened in another tab; 4001: it was closed.
      if (fatal || [1013, 4000, 4001].includes(ev.code)) {
        setPhase("closed");
        const why = ev.reason ? ` (${ev.reason})` : "";
        status(`Disconnected${why}. Reload the page to play again.`);
        return;
      }
      // Anything else (the network, a message too large, the server restarting): come back
      // to the game with its token.
      setPhase("connecting");
      status("Connection lost; reconnecting…");
      const delay = Math.min(10000, 500 * 2 ** Math.min(retries, 5));
      retries += 1;
      setTimeout(connect, delay);
    };
  }

  function send(msg) {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      showError("not connected");
      return;
    }
    msg.id = nextId++;
    const text = JSON.stringify(msg);
    const limit = welcome ? welcome.limits.max_message_bytes : Infinity;
    const size = new TextEncoder().encode(text).length;
    if (size > limit) {
      showError(`message of ${size} bytes is over this server's limit of ${limit} bytes`);
      if (state) render(state);
      return;
    }
    ws.send(text);
  }

  function handle(msg) {
    switch (msg.type) {
      case "session":
        storeToken(msg.session);
        restorePending = Boolean(msg.resumed);
        retries = 0;
        break;
      case "welcome": onWelcome(msg); break;
      case "state":
        if (restorePending && welcome) {
          restorePending = false;
          restoreControls(msg);
        }
        render(msg);
        break;
      case "progress": onProgress(msg); break;
      case "move": break;   // the state that follows shows it
      case "hints": onHints(msg); break;
      case "thinking": onThinking(msg); break;
      case "record": onRecord(msg); break;
      case "error":
        if (msg.fatal) fatal = true;
        showError(msg.message);
        if (state) render(state);   // a refused move: the board as it was
        break;
      case "pong": break;
      default: break;
    }
  }

  // --- settings -------------------------------------------------------------------------
  function onWelcome(msg) {
    welcome = msg;
    $('[data-role="engine"]').textContent = `${msg.engine} ${msg.version}`;
    fillAgents($('[data-role="agent"]'), msg.defaults.agent);
    fillAgents($('[data-role="agent2"]'), msg.defaults.agent);
    const time = $('[data-role="time"]');
    time.innerHTML = "";
    const max = msg.limits.max_time;
    const choices = [0.2, 0.5, 1, 2, 5, 10, 30].filter((t) => max === null || t <= max);
    if (max !== null && !choices.includes(max)) choices.push(max);
    addOption(time, "0", "the agent's own budget");
    for (const t of choices) addOption(time, String(t), `${t} s`);
    time.value = String(msg.defaults.time);
    $('[data-role="rules"]').value = msg.defaults.rules;
    $('[data-role="color"]').value = msg.defaults.color;
    onColor();
    renderParams(1);
    renderParams(2);
  }

  function addOption(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
    return o;
  }

  function fillAgents(select, preferred) {
    select.innerHTML = "";
    const presets = document.createElement("optgroup");
    presets.label = "Presets";
    for (const p of welcome.presets) {
      const o = addOption(presets, `preset:${p.name}`, `${p.name} (${p.spec})`);
      o.dataset.family = p.family;
    }
    const families = document.createElement("optgroup");
    families.label = "Agents";
    for (const a of welcome.agents) {
      if (!a.spec_allowed) continue;
      const o = addOption(families, `agent:${a.name}`, `${a.name}: ${a.source}`);
      o.dataset.family = a.name;
    }
    if (presets.children.length) select.appendChild(presets);
    if (families.children.length) select.appendChild(families);
    const want = [`preset:${preferred}`, `agent:${preferred}`];
    for (const w of want) {
      if (Array.from(select.options).some((o) => o.value === w)) { select.value = w; break; }
    }
  }

  function familyOf(name) {
    return welcome.agents.find((a) => a.name === name);
  }

  function parseSpec(spec) {
    const [family, rest] = [spec.split(":")[0], spec.split(":").slice(1).join(":")];
    const params = {};
    for (const item of rest.split(",")) {
      const [k, v] = item.split("=");
      if (k && v !== undefined) params[k.trim()] = v.trim();
    }
    return { family, params };
  }

  // The parameter inputs of the chosen agent, filled with the preset's values or the defaults.
  function renderParams(which) {
    const select = $(`[data-role="${which === 1 ? "agent" : "agent2"}"]`);
    const box = $(`[data-role="${which === 1 ? "params" : "params2"}"]`);
    box.innerHTML = "";
    if (!welcome || !select.value) return;
    const [kind, name] = [select.value.split(":")[0], select.value.slice(select.value.indexOf(":") + 1)];
    const preset = kind === "preset" ? welcome.presets.find((p) => p.name === name) : null;
    const family = familyOf(preset ? preset.family : name);
    const given = preset ? parseSpec(preset.spec).params : {};
    const editable = family && family.spec_allowed;
    if (family) {
      $('[data-role="agent-summary"]').textContent = `${family.name}: ${family.summary}`;
      for (const p of family.params) {
        const row = document.createElement("label");
        row.className = "param";
        row.title = p.help;
        const label = document.createElement("span");
        label.textContent = p.name;
        row.appendChild(label);
        const value = p.name in given ? given[p.name] : p.default;
        let input;
        if (p.choices) {
          input = document.createElement("select");
          for (const c of p.choices) addOption(input, String(c), String(c));
          input.value = String(value);
        } else if (p.type === "bool") {
          input = document.createElement("input");
          input.type = "checkbox";
          input.checked = value === true || ["1", "true", "yes", "on"].includes(String(value));
        } else {
          input = document.createElement("input");
          input.type = p.type === "str" ? "text" : "number";
          if (p.type !== "str") input.step = p.type === "int" ? "1" : "any";
          if (p.min !== null) input.min = String(p.min);
          if (p.max !== null) input.max = String(p.max);
          input.value = String(value);
        }
        input.dataset.param = p.name;
        input.dataset.initial = inputValue(input);
        input.disabled = !editable;
        input.addEventListener("change", () => showSpec(which));
        row.appendChild(input);
        box.appendChild(row);
      }
    }
    showSpec(which);
  }

  function inputValue(input) {
    return input.type === "checkbox" ? String(input.checked) : String(input.value).trim();
  }

  // The name the server is asked for: the preset or family itself when nothing was edited,
  // else a spec with every parameter that differs from the family's defaults.
  function agentSpec(which) {
    const select = $(`[data-role="${which === 1 ? "agent" : "agent2"}"]`);
    const box = $(`[data-role="${which === 1 ? "params" : "params2"}"]`);
    if (!select.value) return null;
    const kind = select.value.split(":")[0];
    const name = select.value.slice(select.value.indexOf(":") + 1);
    const inputs = Array.from(box.querySelectorAll("[data-param]"));
    const edited = inputs.some((i) => inputValue(i) !== i.dataset.initial);
    if (!edited) return name;
    const preset = kind === "preset" ? welcome.presets.find((p) => p.name === name) : null;
    const family = familyOf(preset ? preset.family : name);
    const parts = [];
    for (const input of inputs) {
      const p = family.params.find((q) => q.name === input.dataset.param);
      const v = inputValue(input);
      const dflt = p.type === "bool" ? String(p.default === true) : String(p.default);
      if (v !== dflt && v !== "") parts.push(`${p.name}=${v}`);
    }
    return parts.length ? `${family.name}:${parts.join(",")}` : family.name;
  }

  function showSpec(which) {
    $(`[data-role="${which === 1 ? "spec" : "spec2"}"]`).textContent = agentSpec(which) || "";
  }

  // A resumed game: the controls show its players, time and rules, not the defaults.
  function restoreControls(s) {
    const b = s.players.black, w = s.players.white;
    const color = b.human && w.human ? "both" : b.human ? "black" : w.human ? "white" : "watch";
    $('[data-role="color"]').value = color;
    onColor();
    selectAgent(1, color === "black" ? w : b);
    if (color === "watch") selectAgent(2, w);
    const time = $('[data-role="time"]');
    if (Array.from(time.options).some((o) => o.value === String(s.time))) time.value = String(s.time);
    $('[data-role="rules"]').value = s.rules;
  }

  function selectAgent(which, player) {
    if (!player || player.human) return;
    const select = $(`[data-role="${which === 1 ? "agent" : "agent2"}"]`);
    for (const v of [`preset:${player.agent}`, `agent:${player.agent}`]) {
      if (Array.from(select.options).some((o) => o.value === v)) {
        select.value = v;
        renderParams(which);
        return;
      }
    }
  }

  function onColor() {
    const color = $('[data-role="color"]').value;
    $('[data-role="agent2-box"]').hidden = color !== "watch";
    $('[data-role="agent-label"]').textContent = color === "watch" ? "Black engine" : "Engine";
  }

  function players() {
    const color = $('[data-role="color"]').value;
    const a1 = agentSpec(1);
    if (color === "black") return { black: "human", white: a1 };
    if (color === "white") return { black: a1, white: "human" };
    if (color === "watch") return { black: a1, white: agentSpec(2) };
    return { black: "human", white: "human" };
  }

  function newGame() {
    hints = null;
    setPhase("waiting");
    send({ type: "new", ...players(), time: Number($('[data-role="time"]').value),
           rules: $('[data-role="rules"]').value });
  }

  // --- rendering ------------------------------------------------------------------------
  function setPhase(phase) {
    document.body.dataset.phase = phase;
  }

  function status(text) {
    $('[data-role="status"]').textContent = text;
  }

  function phaseOf(s) {
    if (s.over) return "over";
    if (s.thinking) return "engine";
    if (s.human_to_move) return "human";
    if (s.paused) return "paused";
    return "engine";
  }

  function sideName(s, color) {
    const p = s.players[color];
    return p.human ? NAMES[color] : `${NAMES[color]} (${p.agent})`;
  }

  function render(s) {
    state = s;
    if (hints && hints.ply !== s.ply) hints = null;
    const humans = ["black", "white"].filter((c) => s.players[c].human);
    const mayPlay = s.human_to_move && !s.thinking;
    const legal = new Set(mayPlay ? s.legal : []);
    const lastIdx = s.last && s.last !== "pass" ? index(s.last) : -1;
    for (let i = 0; i < 64; i++) {
      const sq = squares[i];
      const c = s.board[i];
      const disc = sq.firstChild;
      if (c === "b" || c === "w") {
        sq.dataset.disc = c === "b" ? "black" : "white";
        disc.hidden = false;
      } else {
        delete sq.dataset.disc;
        disc.hidden = true;
      }
      const name = sq.dataset.square;
      if (legal.has(name)) {
        sq.dataset.legal = "true";
        sq.tabIndex = 0;
      } else {
        delete sq.dataset.legal;
        sq.tabIndex = -1;
      }
      sq.classList.toggle("last", i === lastIdx);
      const old = sq.querySelector(".hint");
      if (old) old.remove();
    }
    if (hints) drawHints();
    board.dataset.ply = String(s.ply);
    board.dataset.side = s.side;

    $('[data-role="count-black"]').textContent = String(s.counts.black);
    $('[data-role="count-white"]').textContent = String(s.counts.white);
    const score = $('[data-role="score"]');
    score.dataset.black = String(s.counts.black);
    score.dataset.white = String(s.counts.white);
    $('[data-role="turn"]').textContent = s.over ? "game over" :
      `${NAMES[s.side]} to move · ${s.rules}`;

    let text;
    if (s.over) {
      text = s.result.text;
      if (humans.length === 1) {
        const me = humans[0];
        text += s.result.winner === null ? ": a draw." :
          s.result.winner === me ? ": you win!" : ": the engine wins.";
      } else {
        text += ".";
      }
    } else if (s.thinking) {
      text = `${sideName(s, s.thinking)} is thinking…`;
    } else if (s.human_to_move) {
      const who = humans.length === 2 ? NAMES[s.side] : "You";
      text = s.must_pass ? `${who} ${humans.length === 2 ? "has" : "have"} no legal move: pass.`
        : `${humans.length === 2 ? `${who} to move` : `Your move (${s.side})`}.`;
      if (s.last === "pass") text = `${NAMES[s.side === "black" ? "white" : "black"]} passed. ` + text;
    } else if (s.paused) {
      text = "Paused: Resume to go on.";
    } else {
      text = `${sideName(s, s.side)} to move…`;
    }
    status(text);
    const st = $('[data-role="status"]');
    st.dataset.over = String(s.over);
    st.dataset.turn = s.side;

    const connected = ws && ws.readyState === WebSocket.OPEN;
    const btn = (a) => $$(`button[data-action="${a}"]`);
    const enable = (a, on) => btn(a).forEach((b) => { b.disabled = !(connected && on); });
    enable("new", true);
    enable("apply", !s.over);
    enable("undo", s.ply > 0);
    enable("pass", s.must_pass && !s.thinking);
    enable("hint", !s.over && !s.thinking && !s.hinting);
    enable("stop", Boolean(s.thinking) || s.hinting);
    enable("export-ggf", true);
    enable("export-moves", true);
    enable("import", true);
    btn("resume").forEach((b) => { b.hidden = !s.paused; b.disabled = !connected; });

    if (!s.thinking && !s.hinting) $('[data-role="progress"]').hidden = true;
    renderMoves(s);
    renderGraph(s);
    setPhase(phaseOf(s));
  }

  // One line per move number: black's move, then white's (a pass is written "pass").
  function renderMoves(s) {
    const list = $('[data-role="moves"]');
    list.innerHTML = "";
    const other = (c) => (c === "black" ? "white" : "black");
    const first = s.moves.length % 2 === 0 ? s.side : other(s.side);   // passes are moves too
    const cells = first === "white" ? ["…", ...s.moves] : s.moves.slice();
    for (let k = 0; k < cells.length; k += 2) {
      const li = document.createElement("li");
      for (const m of cells.slice(k, k + 2)) {
        const span = document.createElement("span");
        span.textContent = m;
        li.appendChild(span);
      }
      if (k + 2 >= cells.length) li.className = "current";
      list.appendChild(li);
    }
    list.scrollTop = list.scrollHeight;
  }

  // Black's disc margin by ply: the engine's evaluations (its moves and hints).
  function renderGraph(s) {
    const svg = $('[data-role="graph"]');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const NS = "http://www.w3.org/2000/svg";
    const W = 300, H = 120, MAXP = 60;
    const span = Math.max(16, ...s.evals.map(([, v]) => Math.min(64, Math.abs(v))));
    const x = (p) => (p / MAXP) * W;
    const y = (v) => H / 2 - (Math.max(-span, Math.min(span, v)) / span) * (H / 2 - 6);
    const line = (x1, y1, x2, y2, cls) => {
      const l = document.createElementNS(NS, "line");
      l.setAttribute("x1", x1); l.setAttribute("y1", y1);
      l.setAttribute("x2", x2); l.setAttribute("y2", y2);
      l.setAttribute("class", cls);
      svg.appendChild(l);
    };
    for (let p = 10; p < MAXP; p += 10) line(x(p), 0, x(p), H, "grid");
    line(0, H / 2, W, H / 2, "axis");
    line(x(s.ply), 0, x(s.ply), H, "now");
    const label = (text, yy) => {
      const t = document.createElementNS(NS, "text");
      t.setAttribute("x", 4); t.setAttribute("y", yy);
      t.setAttribute("class", "label");
      t.textContent = text;
      svg.appendChild(t);
    };
    label(`black +${Math.round(span)}`, 11);
    label(`white +${Math.round(span)}`, H - 4);
    if (s.evals.length) {
      const pts = s.evals.map(([p, v]) => `${x(p).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
      const pl = document.createElementNS(NS, "polyline");
      pl.setAttribute("points", pts);
      pl.setAttribute("class", "line");
      svg.appendChild(pl);
      for (const [p, v] of s.evals) {
        const dot = document.createElementNS(NS, "circle");
        dot.setAttribute("cx", x(p).toFixed(1));
        dot.setAttribute("cy", y(v).toFixed(1));
        dot.setAttribute("r", "1.6");
        dot.setAttribute("class", "dot");
        const tip = document.createElementNS(NS, "title");
        tip.textContent = `ply ${p}: ${v > 0 ? "+" : ""}${v}`;
        dot.appendChild(tip);
        svg.appendChild(dot);
      }
    }
    svg.dataset.points = String(s.evals.length);
  }

  // --- search output --------------------------------------------------------------------
  function onThinking(msg) {
    progressStart = performance.now();
    showProgress(msg.kind === "hint" ? "Evaluating every move…" : "Thinking…", 0, msg.time);
    if (state) {
      state.hinting = msg.kind === "hint";
      render(state);
    }
  }

  function onProgress(msg) {
    const effort = msg.depth !== undefined ? `depth ${msg.depth} · ${fmt(msg.nodes)} nodes`
      : `${fmt(msg.visits)} visits`;
    const ev = msg.eval > 0 ? `+${msg.eval}` : `${msg.eval}`;
    const what = msg.kind === "hint" ? "Evaluating" : `${NAMES[msg.color]} thinking`;
    const budget = state ? (state.time || 0) : 0;
    showProgress(`${what}: ${effort} · best ${msg.best || "?"} (${ev}) · ${msg.elapsed} s`,
      msg.elapsed, budget);
  }

  function showProgress(text, elapsed, budget) {
    const box = $('[data-role="progress"]');
    box.hidden = false;
    $('[data-role="progress-text"]').textContent = text;
    const share = budget > 0 ? Math.min(1, elapsed / budget) : 0;
    $('[data-role="progress-fill"]').style.width = `${Math.round(share * 100)}%`;
  }

  function fmt(n) {
    if (n === undefined || n === null) return "?";
    if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
    if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
    return String(n);
  }

  function onHints(msg) {
    hints = msg;
    if (state) render(state);
  }

  function drawHints() {
    for (const m of hints.moves) {
      if (m.eval === null) continue;
      const sq = squares[index(m.square)];
      const span = document.createElement("span");
      span.className = "hint" + (m.square === hints.best ? " best" : "");
      span.textContent = (m.eval > 0 ? "+" : "") + (Math.abs(m.eval) >= 10 || m.exact
        ? Math.round(m.eval) : m.eval.toFixed(1));
      span.title = m.exact ? "exact (solved)" : `${m.visits} visits`;
      sq.dataset.eval = String(m.eval);
      sq.appendChild(span);
    }
  }

  function onRecord(msg) {
    const area = $('[data-role="record"]');
    area.value = exportKind === "ggf" ? msg.ggf : msg.moves;
    area.dataset.moves = msg.moves;
    area.select();
  }

  // --- errors ---------------------------------------------------------------------------
  function showError(text) {
    const box = $('[data-role="error"]');
    box.textContent = text;
    box.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { box.hidden = true; }, 8000);
  }

  // --- actions --------------------------------------------------------------------------
  let exportKind = "ggf";
  const actions = {
    new: newGame,
    apply: () => send({ type: "set", ...players(), time: Number($('[data-role="time"]').value) }),
    undo: () => { setPhase("waiting"); send({ type: "undo" }); },
    pass: () => { setPhase("waiting"); send({ type: "pass" }); },
    hint: () => send({ type: "hint" }),
    stop: () => send({ type: "stop" }),
    resume: () => send({ type: "resume" }),
    "export-ggf": () => { exportKind = "ggf"; send({ type: "export" }); },
    "export-moves": () => { exportKind = "moves"; send({ type: "export" }); },
    import: () => {
      hints = null;
      send({ type: "import", text: $('[data-role="record"]').value });
    },
  };
  $$("button[data-action]").forEach((b) => {
    b.addEventListener("click", () => {
      const fn = actions[b.dataset.action];
      if (fn) fn();
    });
  });
  $('[data-role="color"]').addEventListener("change", onColor);
  $('[data-role="agent"]').addEventListener("change", () => renderParams(1));
  $('[data-role="agent2"]').addEventListener("change", () => renderParams(2));

  connect();
})();
