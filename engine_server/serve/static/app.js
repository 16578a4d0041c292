// The page talks to its engine session over one WebSocket (docs/web.md): every message is a
// JSON object; the server's "state" message is the only source of the game, so the page never
// shows a move the engine has not accepted.  Stepping back through the game, the clock and the
// board editor are the page's own: it replays the server's moves with the rules below.
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const $$ = (sel) => Array.from(document.querySelectorAll(sel));
  const FILES = "abcdefgh";
  const NAMES = { black: "Black", white: "White" };
  const other = (c) => (c === "black" ? "white" : "black");
  const START = "...........................wb......bw...........................";

  // --- names a player reads ---------------------------------------------------------------
  // The server lists agents by their registry names and sources (papers, doc paths); a player
  // picks by strength and style.  Names not listed here (an operator's presets) are shown as
  // they are.  [label, what it is and how strong, the page that says more]
  const DOCS = {
    levels: "/docs/engine.md", strongest: "/docs/best-agent.md", web: "/docs/web.md",
    papers: "/docs/papers/README.md", ucb1: "/docs/papers/ucb1.md", uct: "/docs/papers/uct.md",
    ocba: "/docs/papers/ocba.md", dk: "/docs/papers/dk.md", net: "/docs/net.md",
  };
  const PRESET_INFO = {
    beginner: ["Beginner", "Thinks very little and makes plenty of mistakes: a first opponent.", "levels"],
    easy: ["Easy", "Looks two moves ahead: beatable once you keep your corners safe.", "levels"],
    medium: ["Medium", "Looks six moves ahead with a learned sense of good positions.", "levels"],
    hard: ["Hard", "Looks ten moves ahead with the same sense: few mistakes.", "levels"],
    strong: ["Strongest", "The engine at full strength: deep search, an opening book, perfect endgames.", "strongest"],
    "seed000-shallow": ["Flat Monte Carlo", "Plays many random games after each move and picks the best average.", "ucb1"],
    "seed000-minmax": ["Monte Carlo minimax", "Random games along a few moves of look-ahead.", "ucb1"],
    "seed000-ucb1": ["UCB1 tree search", "A tree search that learns from random games which moves to try.", "ucb1"],
    "seed001-uct": ["UCT tree search", "The classic tree search over random games.", "uct"],
    "seed002-uct": ["Plain UCT", "A simpler tree search: one new move and one random game at a time.", "ocba"],
    "seed002-ocba": ["OCBA tree search", "Spends its random games where the choice is closest.", "ocba"],
    "seed003-puct": ["Alphello Zero", "An AlphaZero-style search guided by a small neural network.", "net"],
    "seed004-dk": ["Monte Carlo with Othello sense", "A tree search whose random games avoid giving away corners.", "dk"],
  };
  const FAMILY_INFO = {
    best: ["Strongest", "The engine at full strength: deep search, an opening book, perfect endgames.", "strongest"],
    ab: ["Alpha-beta search", "Looks ahead move by move with a learned sense of good positions.", "levels"],
    mcts: ["Monte Carlo tree with endgame solver", "A tree search over random games that solves endgames exactly.", "levels"],
    random: ["Random", "Plays any legal move at random: the easiest opponent there is.", "ucb1"],
    "pseudo-random": ["Random, avoiding bad squares", "Random, but stays off the squares next to corners.", "dk"],
    shallow: ["Flat Monte Carlo", "Plays many random games after each move and picks the best average.", "ucb1"],
    minmax: ["Monte Carlo minimax", "Random games along a few moves of look-ahead.", "ucb1"],
    ucb1: ["UCB1 tree search", "A tree search that learns from random games which moves to try.", "ucb1"],
    uct: ["UCT tree search", "The classic tree search over random games.", "uct"],
    ocba: ["OCBA tree search", "Spends its random games where the choice is closest.", "ocba"],
    dk: ["Monte Carlo with Othello sense", "A tree search whose random games avoid giving away corners.", "dk"],
    puct: ["Alphello Zero", "An AlphaZero-style search guided by a small neural network.", "net"],
  };
  const LEVELS = ["beginner", "easy", "medium", "hard", "strong"];
  const DEFAULT_LEVEL = "beginner";   // a newcomer wins some games against it
  const ANALYST_PRESET = "analyst";   // an operator's analyst: not an opponent to choose
  const FIT_PARAMS = ["threads", "memory", "table", "net_threads"];   // set by the server's limits

  function presetInfo(name) {
    const known = PRESET_INFO[name];
    return known ? { label: known[0], blurb: known[1], doc: DOCS[known[2]] }
      : { label: name, blurb: "An opponent set up on this server.", doc: DOCS.levels };
  }

  function familyInfo(name) {
    const known = FAMILY_INFO[name];
    const fam = welcome && welcome.agents.find((a) => a.name === name);
    return known ? { label: known[0], blurb: known[1], doc: DOCS[known[2]] }
      : { label: name, blurb: fam ? plainHelp(fam.summary) : "", doc: DOCS.levels };
  }

  // What a player sees for a player's name as the server reports it (preset, family or spec).
  function playerLabel(name) {
    if (!name) return "";
    if (welcome && welcome.presets.some((p) => p.name === name)) return presetInfo(name).label;
    const family = name.split(":")[0];
    const label = familyInfo(family).label;
    return name.includes(":") ? `${label} (custom)` : label;
  }

  // A parameter's help without the notes meant for the engine's authors: the sources in
  // parentheses ("ours", a paper, a doc path, a match result) go, a plain explanation before
  // them stays.
  function plainHelp(text) {
    const internal = /\bours\b|paper|report|source code|docs\/|\.md\b|othello-|\bseed|\btable \d|algorithm|\bmatch|\blost\b|\bwon\b/i;
    return String(text).replace(/\s*\(([^()]*)\)/g, (all, inner) => {
      const at = inner.search(internal);
      if (at < 0) return all;
      const before = inner.slice(0, at).replace(/[\s,;:]*[^,;:]*$/, "").trim();
      return before.split(/\s+/).length >= 2 ? ` (${before})` : "";
    }).replace(/\s+,/g, ",").trim();
  }

  // A link to a doc page, opened in a new tab.
  function docLink(href, text) {
    const a = document.createElement("a");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = text;
    return a;
  }

  // A search's effort in words: depth and selectivity for alpha-beta, visits for a tree.
  function effortText(e) {
    if (!e) return "";
    if (e.book) return "opening book";
    if (e.exact) return "exact (solved)";
    if (e.depth !== undefined && e.depth !== null) {
      const sel = e.selectivity !== undefined && e.selectivity < 100
        ? ` at ${e.selectivity}% selectivity` : "";
      return `depth ${e.depth}${sel}`;
    }
    if (e.visits !== undefined && e.visits !== null) return `${fmt(e.visits)} visits`;
    return "";
  }

  // The analyst: the agent behind hints, the bar and the analysis.
  function analystLabel() {
    if (!welcome || !welcome.analyst) return "the analyst";
    const a = welcome.analyst;
    const preset = welcome.presets.find((p) => p.spec === a.spec && p.name !== ANALYST_PRESET);
    return preset ? presetInfo(preset.name).label : familyInfo(a.family).label;
  }

  let ws = null;
  let welcome = null;       // agents, presets, limits, defaults
  let state = null;         // the last "state" message
  let positions = [];       // the board after each ply of state.moves, replayed here
  let view = null;          // the ply shown while stepping back; null: the game now
  let hints = null;         // {ply, moves} of the last hint, shown until the position changes
  let analyst = new Map();  // ply -> the analyst's value of that position, black's discs
                            // (the state's "analyst" pairs: the server's account)
  let details = {};         // ply -> the eval or hints message behind a value (its search)
  let analysis = null;      // {moves: {ply: {...}}, done} of "Analyse the game"
  let shownBoard = null;    // the board last drawn (flip animation)
  let editing = null;       // the board editor's board (array of b/w/.), null when not editing
  let nextId = 1;
  let progressStart = 0;
  // The game's token: kept in sessionStorage, so that a reload of this tab (or a connection
  // that drops) comes back to the same game; other tabs have their own.
  const TOKEN_KEY = "othello-session";
  let tokenIsNew = false;     // this page made its token and no server has taken it yet
  // Settings and the game in progress are kept in localStorage: a page opened later (the
  // browser restarted, the server restarted) starts from them.
  const SETTINGS_KEY = "othello-settings";
  const GAME_KEY = "othello-game";
  let restorePending = false; // a resumed game: set the controls from its first state
  let holdSaving = null;      // the id of a restoring import: the game is not saved before it
  let fatal = false;          // the server closed this page's game: no reconnecting
  let retries = 0;

  // --- rules (for stepping back and the editor; the server judges every move played) ------
  const DIRS = [[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [1, -1], [-1, 1], [-1, -1]];

  function index(name) {
    return FILES.indexOf(name[0]) + 8 * (Number(name[1]) - 1);
  }

  function flipsOf(board, i, me) {
    if (board[i] !== ".") return [];
    const them = me === "b" ? "w" : "b";
    const x0 = i % 8, y0 = Math.floor(i / 8);
    const all = [];
    for (const [dx, dy] of DIRS) {
      const line = [];
      let x = x0 + dx, y = y0 + dy;
      while (x >= 0 && x < 8 && y >= 0 && y < 8 && board[x + 8 * y] === them) {
        line.push(x + 8 * y);
        x += dx; y += dy;
      }
      if (line.length && x >= 0 && x < 8 && y >= 0 && y < 8 && board[x + 8 * y] === me) {
        all.push(...line);
      }
    }
    return all;
  }

  function replay(s) {
    let board = (s.start || START).split("");
    let side = s.start_side || "black";
    const out = [{ board: board.join(""), side }];
    for (const m of s.moves) {
      if (m !== "pass") {
        const i = index(m);
        const me = side === "black" ? "b" : "w";
        board = board.slice();
        for (const j of flipsOf(board, i, me)) board[j] = me;
        board[i] = me;
      }
      side = other(side);
      out.push({ board: board.join(""), side });
    }
    return out;
  }

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
    if (editing) {
      const i = index(name);
      editing[i] = { ".": "b", b: "w", w: "." }[editing[i]];
      drawBoard();
      return;
    }
    const sq = squares[index(name)];
    if (!state || sq.dataset.legal !== "true") return;
    setPhase("waiting");   // until the server's state arrives: no second click on an old board
    acting = generalPlace();
    clearError(acting);
    clockBeforeHumanMove();
    send({ type: "move", square: name });
    acting = null;
  }

  // --- storage --------------------------------------------------------------------------
  function load(store, key) {
    try {
      const v = store.getItem(key);
      return v ? (key === TOKEN_KEY ? v : JSON.parse(v)) : null;
    } catch (e) {
      return null;   // storage disabled or a value from another version: nothing kept
    }
  }

  function keep(store, key, value) {
    try {
      if (value === null) store.removeItem(key);
      else store.setItem(key, key === TOKEN_KEY ? value : JSON.stringify(value));
    } catch (e) {
      // storage disabled: nothing to keep
    }
  }

  function saveSettings() {
    keep(localStorage, SETTINGS_KEY, {
      color: $('[data-role="color"]').value, agent: $('[data-role="agent"]').value,
      agent2: $('[data-role="agent2"]').value, time: $('[data-role="time"]').value,
      rules: $('[data-role="rules"]').value, clock: $('[data-role="clock"]').value,
    });
  }

  function applySettings(saved) {
    const set = (role, v) => {
      const el = $(`[data-role="${role}"]`);
      if (v !== undefined && Array.from(el.options).some((o) => o.value === v)) el.value = v;
    };
    set("color", saved.color); set("agent", saved.agent); set("agent2", saved.agent2);
    set("time", saved.time); set("rules", saved.rules); set("clock", saved.clock);
    onColor();
    renderParams(1);
    renderParams(2);
  }

  function saveGame(s) {
    if (holdSaving !== null) return;
    keep(localStorage, GAME_KEY, {
      moves: s.moves, start: s.start, start_side: s.start_side, rules: s.rules,
      players: s.players, over: s.over,
    });
  }

  // --- the link to a game ---------------------------------------------------------------
  function gameText(moves, start, side, rules) {
    if ((start || START) === START && (side || "black") === "black") {
      return moves.filter((m) => m !== "pass").join("");
    }
    return ggfText(moves, start, side, rules);
  }

  // A set-up position travels as a GGF record (its passes are inserted by the server).
  function ggfText(moves, start, side, rules) {
    const bo = "8 " + start.replace(/b/g, "*").replace(/w/g, "O").replace(/\./g, "-")
      + (side === "black" ? " *" : " O");
    let color = side;
    const items = moves.map((m) => {
      const t = `${color === "black" ? "B" : "W"}[${m === "pass" ? "PA" : m}]`;
      color = other(color);
      return t;
    });
    return `(;GM[Othello]TY[${rules === "reversed" ? "8a" : "8"}]BO[${bo}]${items.join("")};)`;
  }

  function linkFragment(s) {
    const params = new URLSearchParams();
    params.set("moves", s.moves.filter((m) => m !== "pass").join(""));
    if (s.rules !== "standard") params.set("rules", s.rules);
    if (s.start !== START || s.start_side !== "black") {
      params.set("start", s.start);
      params.set("side", s.start_side);
    }
    return params.toString();
  }

  function parseLink() {
    const h = location.hash.replace(/^#/, "");
    if (!h) return null;
    const p = new URLSearchParams(h);
    if (!p.has("moves")) return null;
    const moves = (p.get("moves") || "").toLowerCase().match(/[a-h][1-8]/g) || [];
    const start = p.get("start");
    return {
      moves, rules: p.get("rules") || "standard",
      start: start && /^[bw.]{64}$/.test(start) ? start : START,
      start_side: p.get("side") === "white" ? "white" : "black",
    };
  }

  function updateUrl(s) {
    const frag = s.ply || s.start !== START ? "#" + linkFragment(s) : "";
    if (location.hash !== frag && !(frag === "" && location.hash === "")) {
      history.replaceState(null, "", location.pathname + location.search + frag);
    }
  }

  // The link is copied and shown; the page says which, as a clipboard may refuse (an http
  // page other than localhost has none).
  function shareLink() {
    const url = location.origin + location.pathname + "#" + linkFragment(state);
    const box = $('[data-role="link"]');
    const said = $('[data-role="share-status"]');
    box.hidden = false;
    box.value = url;
    box.select();
    const copied = () => { said.textContent = "Link copied."; said.dataset.copied = "true"; };
    const shown = () => {
      said.textContent = "Select the link below and copy it.";
      said.dataset.copied = "false";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(url).then(copied, () => {
        try { if (document.execCommand("copy")) { copied(); return; } } catch (e) { /* below */ }
        shown();
      });
    } else {
      let done = false;
      try { done = document.execCommand("copy"); } catch (e) { done = false; }
      if (done) copied(); else shown();
    }
  }

  // A game from a link or from storage: the players of the controls, then its moves.
  function restoreGame(g) {
    if (g.players) restoreControls({ players: g.players, rules: g.rules });
    $('[data-role="rules"]').value = g.rules === "reversed" ? "reversed" : "standard";
    send({ type: "new", ...players(), time: Number($('[data-role="time"]').value),
           rules: $('[data-role="rules"]').value });
    const text = gameText(g.moves, g.start, g.start_side, g.rules);
    if (text) {
      holdSaving = send({ type: "import", text });
    }
    resetClock();
  }

  // --- connection -----------------------------------------------------------------------
  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    let token = load(sessionStorage, TOKEN_KEY) || "";
    if (!token) {
      // The page names its game before the first connection, so that a balancer that hashes
      // the token (docs/scaling.md) sends every connection of the game to the same server.
      const bytes = crypto.getRandomValues(new Uint8Array(18));
      token = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_");
      keep(sessionStorage, TOKEN_KEY, token);
      tokenIsNew = true;
    }
    const query = `?session=${encodeURIComponent(token)}${tokenIsNew ? "&new=1" : ""}`;
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

  // A request, answered with its id: an error in the answer is shown beside the control that
  // sent it (the action running now, else the status line), a success clears that place.
  function send(msg) {
    const place = acting || generalPlace();
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      showError("not connected", place);
      return null;
    }
    msg.id = nextId++;
    const text = JSON.stringify(msg);
    const limit = welcome ? welcome.limits.max_message_bytes : Infinity;
    const size = new TextEncoder().encode(text).length;
    if (size > limit) {
      showError(`message of ${size} bytes is over this server's limit of ${limit} bytes`, place);
      if (state) render(state);
      return null;
    }
    pending.set(msg.id, place);
    ws.send(text);
    return msg.id;
  }

  function handle(msg) {
    if (holdSaving !== null && msg.id === holdSaving && msg.type !== "state") holdSaving = null;
    if (msg.id !== undefined && pending.has(msg.id)) {
      const place = pending.get(msg.id);
      const then = succeeded.get(msg.id);
      pending.delete(msg.id);
      succeeded.delete(msg.id);
      if (msg.type !== "error") {
        clearError(place);
        if (then) then();
      } else {
        msg.place = place;
      }
    }
    switch (msg.type) {
      case "session":
        keep(sessionStorage, TOKEN_KEY, msg.session);
        tokenIsNew = false;
        // Connected: why an earlier try was refused (a server stopping, another holding the
        // game) is over.
        clearError(generalPlace());
        restorePending = Boolean(msg.resumed);
        retries = 0;
        break;
      case "welcome": onWelcome(msg); break;
      case "state":
        if (restorePending && welcome) {
          restorePending = false;
          restoreControls(msg);
        }
        if (holdSaving !== null && msg.id === holdSaving) holdSaving = null;
        render(msg);
        break;
      case "progress": onProgress(msg); break;
      case "move": break;   // the state that follows shows it
      case "hints": onHints(msg); break;
      case "eval": onEval(msg); break;
      case "thinking": onThinking(msg); break;
      case "record": onRecord(msg); break;
      case "analysis": onAnalysis(msg); break;
      case "error":
        if (msg.fatal) fatal = true;
        if (msg.request === "analyze" || (analysis && !analysis.done && !msg.request)) {
          analysis = null;
        }
        showError(msg.message, msg.place || generalPlace());
        if (state) render(state);   // a refused move: the board as it was
        break;
      case "pong": break;
      default: break;
    }
  }

  // --- settings -------------------------------------------------------------------------
  function onWelcome(msg) {
    const first = welcome === null;
    welcome = msg;
    $('[data-role="engine"]').textContent = `${msg.engine} ${msg.version}`;
    const preferred = welcome.presets.some((p) => p.name === DEFAULT_LEVEL) ? DEFAULT_LEVEL
      : msg.defaults.agent;
    fillAgents($('[data-role="agent"]'), preferred);
    fillAgents($('[data-role="agent2"]'), preferred);
    renderAnalystNote();
    const time = $('[data-role="time"]');
    time.innerHTML = "";
    const max = msg.limits.max_time;
    const choices = [0.2, 0.5, 1, 2, 5, 10, 30].filter((t) => max === null || t <= max);
    if (max !== null && !choices.includes(max)) choices.push(max);
    addOption(time, "0", "the engine's own pace");
    for (const t of choices) addOption(time, String(t), `${num(t, 2)} s`);
    time.value = String(msg.defaults.time);
    $('[data-role="rules"]').value = msg.defaults.rules;
    $('[data-role="color"]').value = msg.defaults.color;
    onColor();
    renderParams(1);
    renderParams(2);
    send({ type: "evaluate", on: true });   // the analyst values the positions for the bar
    if (restorePending || !first) return;   // the server's game is this tab's own
    const saved = load(localStorage, SETTINGS_KEY);
    if (saved) applySettings(saved);
    const link = parseLink();
    const game = load(localStorage, GAME_KEY);
    const serverAgent = [`preset:${msg.defaults.agent}`, `agent:${msg.defaults.agent}`];
    if (link) {
      restoreGame({ ...link, players: null });
    } else if (game && !game.over && game.moves && (game.moves.length || game.start !== START)) {
      restoreGame(game);
    } else if (saved || !serverAgent.includes($('[data-role="agent"]').value)) {
      // the server's game has its defaults: follow the remembered settings, or the level
      // this page starts a newcomer with
      newGame();
    }
  }

  function addOption(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
    return o;
  }

  // The opponents: the levels in order of strength, the papers' agents, the server's own
  // presets, then every other kind of agent with settings to choose.  A name is listed once:
  // a kind of agent that a preset already is (the strongest level is the engine's best agent)
  // is not listed again.
  function fillAgents(select, preferred) {
    select.innerHTML = "";
    const group = (label) => {
      const g = document.createElement("optgroup");
      g.label = label;
      return g;
    };
    const levels = group("Levels");
    const papers = group("From the papers");
    const own = group("This server's opponents");
    const families = group("Advanced: choose the settings");
    const used = new Set();
    const label = (text) => {
      let t = text, k = 2;
      while (used.has(t)) t = `${text} (${k++})`;
      used.add(t);
      return t;
    };
    const presets = welcome.presets.filter((p) => p.name !== ANALYST_PRESET);
    const ordered = presets.slice().sort((a, b) =>
      (LEVELS.indexOf(a.name) + 1 || 99) - (LEVELS.indexOf(b.name) + 1 || 99));
    const asIs = new Set();   // families a preset runs with their own settings
    for (const p of ordered) {
      const info = presetInfo(p.name);
      const target = LEVELS.includes(p.name) ? levels : PRESET_INFO[p.name] ? papers : own;
      const o = addOption(target, `preset:${p.name}`, label(info.label));
      o.dataset.family = p.family;
      o.title = info.blurb;
      const params = parseSpec(p.spec).params;
      if (Object.keys(params).every((k) => FIT_PARAMS.includes(k))) asIs.add(p.family);
    }
    for (const a of welcome.agents) {
      if (!a.spec_allowed || asIs.has(a.name)) continue;
      const info = familyInfo(a.name);
      const paper = presets.some((p) => p.family === a.name && PRESET_INFO[p.name]
                                 && !LEVELS.includes(p.name));
      const o = addOption(families, `agent:${a.name}`,
                          label(paper ? `${info.label}, your settings` : info.label));
      o.dataset.family = a.name;
      o.title = info.blurb;
    }
    for (const g of [levels, papers, own, families]) if (g.children.length) select.appendChild(g);
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

  function roles(which) {
    const two = which === 1 ? "" : "2";
    return { select: `agent${two}`, params: `params${two}`, spec: `spec${two}`,
             blurb: `agent${two}-blurb`, summary: `agent${two}-summary` };
  }

  // The chosen agent's one-line description, and behind "Advanced" what it is in plain words
  // with a link to its page of the docs, and its settings (the preset's values or the
  // defaults), each with its help.
  function renderParams(which) {
    const r = roles(which);
    const select = $(`[data-role="${r.select}"]`);
    const box = $(`[data-role="${r.params}"]`);
    box.innerHTML = "";
    if (!welcome || !select.value) return;
    const [kind, name] = [select.value.split(":")[0], select.value.slice(select.value.indexOf(":") + 1)];
    const preset = kind === "preset" ? welcome.presets.find((p) => p.name === name) : null;
    const family = familyOf(preset ? preset.family : name);
    const given = preset ? parseSpec(preset.spec).params : {};
    const editable = family && family.spec_allowed;
    const info = preset ? presetInfo(name) : familyInfo(name);
    $(`[data-role="${r.blurb}"]`).textContent = info.blurb;
    const summary = $(`[data-role="${r.summary}"]`);
    summary.textContent = `${info.label}: ${info.blurb} `;
    summary.appendChild(docLink(info.doc, "More about it"));
    summary.append(editable ? ". Changing a setting below makes a custom opponent."
      : ". This server offers it with these settings only.");
    if (family) {
      for (const p of family.params) {
        const row = document.createElement("label");
        row.className = "param";
        row.title = plainHelp(p.help);
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
        const help = document.createElement("small");
        help.className = "help";
        help.textContent = plainHelp(p.help);
        row.appendChild(help);
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
    const r = roles(which);
    const select = $(`[data-role="${r.select}"]`);
    const box = $(`[data-role="${r.params}"]`);
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
    $(`[data-role="${roles(which).spec}"]`).textContent = agentSpec(which) || "";
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
    if (s.time !== undefined && Array.from(time.options).some((o) => o.value === String(s.time))) {
      time.value = String(s.time);
    }
    if (s.rules) $('[data-role="rules"]').value = s.rules;
  }

  function selectAgent(which, player) {
    if (!player || player.human) return;
    const select = $(`[data-role="${roles(which).select}"]`);
    // a family listed as a preset (best: the Strongest level) is found by its spec
    const same = welcome.presets.find((p) => p.spec === player.spec && p.name !== ANALYST_PRESET);
    for (const v of [`preset:${player.agent}`, `agent:${player.agent}`,
                     same ? `preset:${same.name}` : ""]) {
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
    $('[data-role="agent-label"]').textContent = color === "watch" ? "Black engine" : "Opponent";
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
    view = null;
    analysis = null;
    editing = null;
    setPhase("waiting");
    resetClock();
    send({ type: "new", ...players(), time: clockTime() ?? Number($('[data-role="time"]').value),
           rules: $('[data-role="rules"]').value });
    // On a phone the controls are below the board: bring the board back into view.
    if (window.matchMedia("(max-width: 720px)").matches) board.scrollIntoView({ block: "center" });
  }

  function swapColours() {
    const color = $('[data-role="color"]');
    if (color.value === "black" || color.value === "white") {
      color.value = other(color.value);
    } else if (color.value === "watch") {
      const a = $('[data-role="agent"]'), b = $('[data-role="agent2"]');
      [a.value, b.value] = [b.value, a.value];
      renderParams(1);
      renderParams(2);
    }
    onColor();
    saveSettings();
    newGame();
  }

  // --- the clock (the page's own: the server knows only the time per move) ------------------
  // A side's time runs while it is to move; the increment is added after each of its moves.
  // An engine side is given, per move, a share of what is left on its clock.
  let clock = null;   // {base, inc, left: {black, white} in ms, running, since, flagged}
  let clockTimer = null;

  function clockSetting() {
    const v = $('[data-role="clock"]').value;
    if (!v) return null;
    const [base, inc] = v.split("+").map(Number);
    return { base: base * 1000, inc: inc * 1000 };
  }

  function resetClock() {
    const c = clockSetting();
    clock = c ? { ...c, left: { black: c.base, white: c.base }, running: null, since: 0,
                  flagged: null, ply: 0 } : null;
    renderClock();
  }

  // Seconds for the engine's next move: a 20th of what is left plus most of the increment.
  function clockTime(color) {
    if (!clock) return null;
    const left = color ? clock.left[color] : clock.base;
    let t = Math.max(0.05, (left / 20 + clock.inc * 0.8) / 1000);
    const max = welcome ? welcome.limits.max_time : null;
    if (max !== null) t = Math.min(t, max);
    return Math.round(t * 100) / 100;
  }

  function clockBeforeHumanMove() {
    // The engine's reply is searched with what its clock allows (sent before the move).
    if (!clock || !state) return;
    const engine = other(state.side);
    if (!state.players[engine].human) send({ type: "set", time: clockTime(engine) });
  }

  function tickClock(now) {
    if (!clock || !clock.running) return;
    clock.left[clock.running] -= now - clock.since;
    clock.since = now;
    if (clock.left[clock.running] <= 0) {
      clock.left[clock.running] = 0;
      clock.flagged = clock.running;
      clock.running = null;
      if (state && !state.players[clock.flagged].human) send({ type: "stop" });
      if (state) render(state);
    }
  }

  function clockOnState(s) {
    if (!clock) return;
    const now = performance.now();
    tickClock(now);
    if (s.ply > clock.ply && clock.running) {
      for (let p = clock.ply; p < s.ply; p++) {
        const mover = positions[p] ? positions[p].side : null;
        if (mover && s.moves[p] !== "pass") clock.left[mover] += clock.inc;
      }
    }
    clock.ply = s.ply;
    const runs = !s.over && !s.paused && !clock.flagged;
    clock.running = runs ? s.side : null;
    clock.since = now;
    // Two engines: each move's budget follows its clock (it applies from the next search).
    if (runs && !s.players[s.side].human && !s.players[other(s.side)].human && !s.thinking) {
      send({ type: "set", time: clockTime(s.side) });
    }
    if (!clockTimer) clockTimer = setInterval(() => { tickClock(performance.now()); renderClock(); }, 200);
  }

  function fmtClock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  function renderClock() {
    const box = $('[data-role="clocks"]');
    box.hidden = !clock;
    if (!clock) return;
    for (const c of ["black", "white"]) {
      const el = $(`[data-role="clock-${c}"]`);
      el.textContent = `${NAMES[c]} ${fmtClock(clock.left[c])}`;
      el.dataset.ms = String(Math.round(clock.left[c]));
      el.dataset.running = String(clock.running === c);
      el.dataset.flagged = String(clock.flagged === c);
    }
  }

  // --- rendering ------------------------------------------------------------------------
  function setPhase(phase) {
    document.body.dataset.phase = phase;
  }

  function status(text) {
    $('[data-role="status"]').textContent = text;
  }

  function phaseOf(s) {
    if (clock && clock.flagged) return "over";
    if (s.over) return "over";
    if (s.thinking) return "engine";
    if (s.human_to_move) return "human";
    if (s.paused) return "paused";
    return "engine";
  }

  function sideName(s, color) {
    const p = s.players[color];
    return p.human ? NAMES[color] : `${NAMES[color]} (${playerLabel(p.agent)})`;
  }

  function render(s) {
    state = s;
    positions = replay(s);
    if (view !== null && view >= s.ply) view = null;
    if (hints && hints.ply !== s.ply) hints = null;
    analyst = new Map(s.analyst || []);
    for (const k of Object.keys(details)) {
      if (!analyst.has(Number(k)) || analyst.get(Number(k)) !== details[k].value) delete details[k];
    }
    // An analysis holds while the game only goes on from the moves it analysed.
    if (analysis && s.moves.slice(0, analysis.of.length).join() !== analysis.of.join()) {
      analysis = null;
    }
    const humans = ["black", "white"].filter((c) => s.players[c].human);
    clockOnState(s);
    drawBoard();

    let text;
    if (clock && clock.flagged) {
      text = `${NAMES[clock.flagged]} ran out of time: ${NAMES[other(clock.flagged)]} wins.`;
    } else if (s.over) {
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
      if (s.last === "pass") text = `${NAMES[other(s.side)]} passed. ` + text;
    } else if (s.paused) {
      text = "Paused: Resume to go on.";
    } else {
      text = `${sideName(s, s.side)} to move…`;
    }
    status(text);
    const st = $('[data-role="status"]');
    st.dataset.over = String(s.over);
    st.dataset.turn = s.side;

    enableButtons();
    if (!s.thinking && !s.hinting) $('[data-role="progress"]').hidden = true;
    renderHintNote();
    renderMoves();
    renderGraph();
    renderEvalBar();
    renderClock();
    renderAnalysisNote();
    saveGame(s);
    updateUrl(s);
    setPhase(phaseOf(s));
  }

  function enableButtons() {
    const s = state;
    const connected = ws && ws.readyState === WebSocket.OPEN;
    const flagged = Boolean(clock && clock.flagged);
    const btn = (a) => $$(`button[data-action="${a}"]`);
    const enable = (a, on) => btn(a).forEach((b) => { b.disabled = !(connected && on); });
    const shown = view === null ? s.ply : view;
    enable("new", true);
    enable("rematch", true);
    enable("swap", true);
    enable("apply", !s.over);
    enable("undo", s.ply > 0 && !editing);
    enable("pass", s.must_pass && !s.thinking && view === null && !flagged);
    enable("hint", !s.over && !s.thinking && !s.hinting && view === null && !flagged);
    enable("stop", Boolean(s.thinking) || s.hinting);
    enable("first", shown > 0 && !editing);
    enable("back", shown > 0 && !editing);
    enable("forward", shown < s.ply && !editing);
    enable("last", shown < s.ply && !editing);
    enable("branch", view !== null && !editing);
    enable("analyze", s.ply > 0 && !(analysis && !analysis.done));
    for (const a of ["export-ggf", "export-moves", "import", "share", "edit", "edit-clear",
                     "edit-done", "edit-cancel"]) enable(a, true);
    for (const a of ["edit-clear", "edit-done", "edit-cancel"]) {
      btn(a).forEach((b) => { b.hidden = !editing; });
    }
    $('[data-role="edit-side"]').hidden = !editing;
    btn("edit").forEach((b) => { b.hidden = Boolean(editing); });
    btn("resume").forEach((b) => { b.hidden = !s.paused; b.disabled = !connected; });
    const ended = s.over || flagged;
    btn("rematch").forEach((b) => { b.hidden = !ended; });
    btn("swap").forEach((b) => { b.hidden = !ended || $('[data-role="color"]').value === "both"; });
  }

  // The board at the ply shown: the game now, a ply stepped back to, or the editor's board.
  function drawBoard() {
    const s = state;
    const reviewing = view !== null;
    const shown = reviewing ? view : s.ply;
    const text = editing ? editing.join("") : reviewing ? positions[view].board : s.board;
    const flagged = Boolean(clock && clock.flagged);
    const mayPlay = !editing && !reviewing && !flagged && s.human_to_move && !s.thinking;
    const legal = new Set(mayPlay ? s.legal : []);
    // The last move of each side up to the ply shown.
    const lastOf = { black: -1, white: -1 };
    let latest = -1;
    if (!editing) {
      for (let p = 0; p < shown; p++) {
        const m = s.moves[p];
        if (m === "pass") continue;
        lastOf[positions[p].side] = index(m);
        latest = index(m);
      }
    }
    const animate = shownBoard !== null && !editing;
    for (let i = 0; i < 64; i++) {
      const sq = squares[i];
      const c = text[i];
      const disc = sq.firstChild;
      if (c === "b" || c === "w") {
        sq.dataset.disc = c === "b" ? "black" : "white";
        disc.hidden = false;
      } else {
        delete sq.dataset.disc;
        disc.hidden = true;
      }
      const was = animate ? shownBoard[i] : c;
      const flipped = (was === "b" || was === "w") && (c === "b" || c === "w") && was !== c;
      const placed = was === "." && c !== ".";
      // a redraw of the same board (a later state: a value, a hint) keeps the last animation
      if (text !== shownBoard) sq.classList.remove("flip", "placed");
      if (flipped || placed) {
        void sq.offsetWidth;   // restart the animation
        sq.classList.add(flipped ? "flip" : "placed");
      }
      const name = sq.dataset.square;
      if (legal.has(name)) {
        sq.dataset.legal = "true";
        sq.tabIndex = 0;
      } else {
        delete sq.dataset.legal;
        sq.tabIndex = editing ? 0 : -1;
      }
      sq.classList.toggle("last", i === latest);
      if (i === lastOf.black) sq.dataset.last = "black";
      else if (i === lastOf.white) sq.dataset.last = "white";
      else delete sq.dataset.last;
      const old = sq.querySelector(".hint");
      if (old) old.remove();
      delete sq.dataset.eval;
    }
    shownBoard = text;
    if (hints && !reviewing && !editing) drawHints();
    board.dataset.ply = String(s.ply);
    board.dataset.view = String(shown);
    board.dataset.reviewing = String(reviewing);
    board.dataset.editing = String(Boolean(editing));
    board.dataset.side = editing ? $('[data-role="edit-side"]').value
      : reviewing ? positions[view].side : s.side;
    const count = (ch) => text.split("").filter((x) => x === ch).length;
    const black = count("b"), white = count("w");
    $('[data-role="count-black"]').textContent = String(black);
    $('[data-role="count-white"]').textContent = String(white);
    const score = $('[data-role="score"]');
    score.dataset.black = String(black);
    score.dataset.white = String(white);
    $('[data-role="turn"]').textContent = editing ? "setting up" :
      reviewing ? `move ${shown} of ${s.ply}` :
      s.over ? "game over" : `${NAMES[s.side]} to move · ${s.rules}`;
  }

  function goTo(p) {
    if (!state || editing) return;
    const k = Math.max(0, Math.min(state.ply, p));
    view = k === state.ply ? null : k;
    drawBoard();
    renderHintNote();
    enableButtons();
    renderMoves();
    renderGraph();
    renderEvalBar();
  }

  function shownPly() {
    return view === null ? state.ply : view;
  }

  // Play on from the ply shown: the moves after it are dropped (the server's game becomes
  // the moves up to it; whoever is to move there moves next).
  function branch() {
    if (!state || view === null) return;
    const moves = state.moves.slice(0, view);
    const text = gameText(moves, state.start, state.start_side, state.rules);
    view = null;
    hints = null;
    analysis = null;
    if (!text) send({ type: "new" });
    else send({ type: "import", text });
  }

  // One line per move number: black's move, then white's (a pass is written "pass"); each a
  // button that shows the board after it.
  function renderMoves() {
    const s = state;
    const list = $('[data-role="moves"]');
    list.innerHTML = "";
    const shown = shownPly();
    const cells = s.moves.map((m, k) => ({ m, ply: k + 1 }));
    if (s.start_side === "white") cells.unshift(null);
    for (let k = 0; k < cells.length; k += 2) {
      const li = document.createElement("li");
      for (const cell of cells.slice(k, k + 2)) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "mv";
        if (cell === null) {
          b.textContent = "…";
          b.disabled = true;
        } else {
          b.textContent = cell.m;
          b.dataset.ply = String(cell.ply);
          const a = analysis && analysis.moves[cell.ply - 1];
          if (a && a.loss !== null) {
            b.dataset.loss = String(a.loss);
            b.title = verdictText(a);
            if (a.mark) {
              b.classList.add(a.mark === "??" ? "blunder" : "mistake");
              b.dataset.mark = a.mark;
              b.textContent = `${cell.m}${a.mark}`;
            }
          }
          if (cell.ply === shown) b.setAttribute("aria-current", "true");
          b.addEventListener("click", () => goTo(cell.ply));
        }
        li.appendChild(b);
      }
      if (k + 2 >= cells.length) li.className = "current";
      list.appendChild(li);
    }
    const cur = list.querySelector('[aria-current="true"]');
    if (cur && view !== null) cur.scrollIntoView({ block: "nearest" });
    else list.scrollTop = list.scrollHeight;
  }

  // The evaluations (black's discs), by the side that searched: one series per side, so two
  // engines' views are not joined into one zig-zag line.
  function seriesOf() {
    const s = state;
    const out = { black: [], white: [] };
    for (const [p, v] of s.evals) {
      const mover = positions[p] ? positions[p].side : (p % 2 === 0 ? s.start_side : other(s.start_side));
      out[mover].push([p, v]);
    }
    return out;
  }

  // The analyst's values, black's discs, by ply: the server's (live evaluation, hints, the
  // whole-game analysis), and each analysed move's value after it where nothing else is known.
  function analystSeries() {
    const out = new Map(analyst);
    if (analysis) {
      for (const [k, a] of Object.entries(analysis.moves)) {
        const p = Number(k) + 1;
        if (a.after !== null && !out.has(p)) out.set(p, a.after);
      }
    }
    return out;
  }

  function renderGraph() {
    const s = state;
    const svg = $('[data-role="graph"]');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const NS = "http://www.w3.org/2000/svg";
    const W = 300, H = 120;
    // the axis spans the game (a short game is not squeezed into the left edge)
    const MAXP = Math.max(8, s.ply);
    const step = MAXP >= 30 ? 10 : MAXP >= 12 ? 5 : 2;
    const series = seriesOf();
    const judged = analystSeries();
    const values = s.evals.map(([, v]) => v).concat(Array.from(judged.values()));
    const span = Math.max(16, ...values.filter((v) => v !== null).map((v) => Math.min(64, Math.abs(v))));
    const x = (p) => (p / MAXP) * W;
    const y = (v) => H / 2 - (Math.max(-span, Math.min(span, v)) / span) * (H / 2 - 6);
    const el = (tag, attrs, cls) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (cls) e.setAttribute("class", cls);
      svg.appendChild(e);
      return e;
    };
    for (let p = step; p < MAXP; p += step) {
      el("line", { x1: x(p), y1: 0, x2: x(p), y2: H }, "grid");
      const t = el("text", { x: x(p) + 2, y: H / 2 + 10 }, "label tick");
      t.textContent = String(p);
    }
    svg.dataset.plies = String(MAXP);
    el("line", { x1: 0, y1: H / 2, x2: W, y2: H / 2 }, "axis");
    el("line", { x1: x(shownPly()), y1: 0, x2: x(shownPly()), y2: H }, "now");
    el("text", { x: 4, y: 11 }, "label").textContent = `black +${Math.round(span)}`;
    el("text", { x: 4, y: H - 4 }, "label").textContent = `white +${Math.round(span)}`;
    const draw = (pts, cls, name, whose) => {
      if (!pts.length) return;
      const pl = el("polyline", {
        points: pts.map(([p, v]) => `${x(p).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      }, `line ${cls}`);
      pl.dataset.series = name;
      pl.dataset.points = String(pts.length);
      for (const [p, v] of pts) {
        const dot = el("circle", { cx: x(p).toFixed(1), cy: y(v).toFixed(1), r: "1.8" }, `dot ${cls}`);
        dot.dataset.ply = String(p);
        dot.dataset.value = String(v);
        const tip = document.createElementNS(NS, "title");
        tip.textContent = `ply ${p}: ${discs(v, 1, true)} for black (${whose})`;
        dot.appendChild(tip);
      }
    };
    const pts = Array.from(judged.entries()).filter(([, v]) => v !== null)
      .sort((a, b) => a[0] - b[0]);
    draw(pts, "analysis", "analysis", `the analyst, ${analystLabel()}`);
    if (analysis) {
      for (const [k, a] of Object.entries(analysis.moves)) {
        if (a.mark && a.after !== null) {
          const mark = el("circle", { cx: x(Number(k) + 1).toFixed(1), cy: y(a.after).toFixed(1),
                                      r: "3.2" }, a.mark === "??" ? "mark blunder" : "mark mistake");
          mark.dataset.ply = String(Number(k) + 1);
        }
      }
    }
    draw(series.black, "black", "black", `${sideName(s, "black")}'s own view`);
    draw(series.white, "white", "white", `${sideName(s, "white")}'s own view`);
    svg.dataset.points = String(s.evals.length);
    svg.dataset.series = ["black", "white"].filter((c) => series[c].length).join(",");
    const legend = $('[data-role="legend"]');
    legend.innerHTML = "";
    if (pts.length) {
      const item = document.createElement("span");
      item.className = "key analysis";
      item.textContent = `Analyst (${analystLabel()})`;
      legend.appendChild(item);
    }
    for (const c of ["black", "white"]) {
      if (!series[c].length) continue;
      const item = document.createElement("span");
      item.className = `key ${c}`;
      item.textContent = `${sideName(s, c)}'s own view`;
      legend.appendChild(item);
    }
  }

  // The bar beside the board: black's share grows with black's expected disc margin, as the
  // analyst values the position shown (or, before it has, the last position it valued).
  function renderEvalBar() {
    const s = state;
    const p = shownPly();
    const judged = analystSeries();
    let v = null, from = p;
    if (judged.has(p)) {
      v = judged.get(p);
    } else {
      let last = -1;
      for (const [q, e] of judged) if (q < p && e !== null && q > last) { last = q; v = e; }
      if (last >= 0) from = last;
      if (v === null && s.start === START && s.start_side === "black") {
        v = 0;   // the usual start is even
        from = 0;
      }
    }
    const bar = $('[data-role="evalbar"]');
    const share = v === null ? 0.5 : 0.5 + 0.5 * Math.tanh(v / 24);
    $('[data-role="evalfill"]').style.height = `${(share * 100).toFixed(1)}%`;
    const txt = v === null ? "" : num(v, Math.abs(v) >= 10 ? 0 : 1, true);
    $('[data-role="evaltext"]').textContent = txt;
    bar.dataset.eval = v === null ? "" : String(v);
    bar.dataset.ply = v === null ? "" : String(from);
    bar.setAttribute("aria-valuenow", v === null ? "0" : String(v));
    bar.classList.toggle("white-ahead", v !== null && v < 0);
    const d = details[from];
    const effort = d ? effortText(d) : "";
    bar.title = v === null ? `The analyst (${analystLabel()}) has not valued this position yet.`
      : `${discs(v, 1, true)} for black at the end with good play, by the analyst `
        + `(${analystLabel()}${effort ? `, ${effort}` : ""})`
        + (from !== p ? `; the last position it valued, after move ${from}` : "");
  }

  // --- whole-game analysis ----------------------------------------------------------------
  function analyze() {
    if (!state || !state.ply) return;
    analysis = { moves: {}, done: false, of: state.moves.slice() };
    $('[data-role="analysis"]').textContent = "Analysing…";
    send({ type: "analyze" });
    enableButtons();
  }

  function onAnalysis(msg) {
    if (!analysis || !state) return;
    for (const a of msg.moves) analysis.moves[a.ply] = a;
    analysis.done = Boolean(msg.done);
    renderMoves();
    renderGraph();
    renderEvalBar();
    renderAnalysisNote();
    enableButtons();
  }

  function renderAnalysisNote() {
    const note = $('[data-role="analysis"]');
    if (!analysis) { note.textContent = ""; delete note.dataset.done; return; }
    const all = Object.values(analysis.moves);
    const bad = all.filter((a) => a.mark);
    note.dataset.done = String(analysis.done);
    note.dataset.marked = String(bad.length);
    if (!analysis.done) {
      note.textContent = `Analysing… ${all.length} of ${plural(state.ply, "move")}`;
      return;
    }
    const side = (c) => bad.filter((a) => a.color === c).reduce((t, a) => t + a.loss, 0);
    const lost = `Discs lost at them: black ${num(side("black"))}, white ${num(side("white"))}.`;
    const found = bad.length ? `${plural(bad.length, "move")} marked (? and ??). ${lost}`
      : "No move marked.";
    note.textContent = `${found} ${thresholdText(all)}`;
  }

  // What a mark means, from the analysed moves: a search's value is marked only where the loss
  // passes twice the spread of a value of that depth at that stage of the game (the server's
  // figure, per move), an exact value from 2 discs, a book move never.
  function thresholdText(all) {
    const searched = all.filter((a) => !a.book && !a.exact && a.mistake);
    const parts = [];
    if (searched.length) {
      const lo = Math.min(...searched.map((a) => a.mistake));
      const hi = Math.max(...searched.map((a) => a.mistake));
      const depths = [...new Set(searched.map((a) => a.depth).filter((d) => d))];
      const range = lo === hi ? discs(lo) : `${num(lo)} to ${discs(hi)} by the stage of the game`;
      parts.push("a searched move is marked from a loss of " + range
        + (depths.length === 1 ? ` (values ${depths[0]} plies deep` : " (values")
        + " stray by about half that from a deeper search's: a smaller loss is noise)");
    }
    if (all.some((a) => a.exact)) parts.push("from 2 discs where they are exact");
    if (all.some((a) => a.book)) parts.push("book moves never");
    return parts.length ? `Marks: ${parts.join("; ")}.` : "";
  }

  // One analysed move in words, for its title in the move list.
  function verdictText(a) {
    if (a.book) {
      return a.loss > 0 ? `book move, ${discs(a.loss)} below the book's best, ${a.best}`
        : "book move: the book's best";
    }
    if (a.mark) return `lost ${discs(a.loss)}; best ${a.best}`;
    if (!a.loss) return a.value === null ? "the only move" : "the best move found";
    return `${discs(a.loss)} below ${a.best}, within the search's noise here `
      + `(marked from ${discs(a.mistake)})`;
  }

  // --- board editor ---------------------------------------------------------------------
  function startEditing() {
    if (!state) return;
    editing = (view === null ? state.board : positions[view].board).split("");
    view = null;
    $('[data-role="edit-side"]').value = state.side;
    drawBoard();
    enableButtons();
  }

  function finishEditing() {
    const side = $('[data-role="edit-side"]').value;
    const start = editing.join("");
    editing = null;
    hints = null;
    analysis = null;
    resetClock();
    // back to the board, without what earlier requests left said (an import's error)
    for (const place of Array.from(errors.keys())) clearError(place);
    $('[data-role="board"]').scrollIntoView({ block: "nearest" });
    send({ type: "import", text: ggfText([], start, side, state.rules) });
  }

  // --- search output --------------------------------------------------------------------
  let hintBudget = 0;

  function onThinking(msg) {
    progressStart = performance.now();
    hintBudget = msg.time || 0;
    showProgress(msg.kind === "hint" ? `The analyst (${analystLabel()}) is valuing every move…`
      : "Thinking…", 0, msg.time);
    if (state) {
      state.hinting = msg.kind === "hint";
      enableButtons();
    }
  }

  // A search in progress: the opponent's (its own view of the game, which never moves the bar)
  // or the analyst's hint.  Each number says whose discs it counts.
  function onProgress(msg) {
    const effort = [effortText(msg), msg.nodes ? `${fmt(msg.nodes)} nodes` : ""]
      .filter(Boolean).join(" · ");
    const who = NAMES[msg.color];
    const ev = `${discs(msg.eval, 1, true)} for ${who}`;
    const hint = msg.kind === "hint";
    const what = hint ? `Analyst (${analystLabel()})` : `${state ? sideName(state, msg.color) : who} thinking`;
    const budget = hint ? hintBudget : state ? (state.time || 0) : 0;
    showProgress(`${what}: ${effort} · best ${msg.best || "?"} `
      + `(${ev}${hint ? "" : ", its own view"}) · ${num(msg.elapsed, 1)} s`,
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

  // A number as the page prints it (discs, seconds): rounded half away from zero to at most
  // `digits` decimals, never "-0" nor float noise such as 29.400000000000002; `signed` puts "+"
  // before a positive one.
  function num(v, digits = 1, signed = false) {
    const f = 10 ** digits;
    const r = (Math.sign(v) * Math.round(Math.abs(v) * f)) / f || 0;   // -0 and NaN: 0
    return (signed && r > 0 ? "+" : "") + String(r);
  }

  // "1 disc", "+1 disc", "2.5 discs": the noun agrees with the number as printed.
  function discs(v, digits = 1, signed = false) {
    const t = num(v, digits, signed);
    return `${t} ${Math.abs(Number(t)) === 1 ? "disc" : "discs"}`;
  }

  function plural(n, noun) {
    return `${n} ${noun}${n === 1 ? "" : "s"}`;
  }

  // The analyst's value of a position (black's discs), from the live evaluation: the state
  // that follows carries the value, this message what the search was.
  function onEval(msg) {
    details[msg.ply] = msg;
  }

  function onHints(msg) {
    // The best move marked is the one with the highest value shown (a tree's most visited
    // move may not be).
    let best = null;
    for (const m of msg.moves) {
      if (m.eval !== null && (best === null || m.eval > best.eval
                              || (m.eval === best.eval && m.square === msg.best))) best = m;
    }
    hints = { ...msg, best: best ? best.square : msg.best };
    if (msg.value !== undefined) details[msg.ply] = { ...msg, exact: false };
    if (state) render(state);
  }

  // Who gives the hints, the bar and the analysis, in the evaluation box.
  function renderAnalystNote() {
    const note = $('[data-role="analyst-note"]');
    note.textContent = `Hints, the bar and "Analyse the game" come from the analyst: `
      + `${analystLabel()}, the strongest engine this server allows, never your opponent. `
      + "The values count discs at the end of the game for black (on the board: for the side "
      + "to move). ";
    note.appendChild(docLink(DOCS.web, "How it works"));
  }

  function renderHintNote() {
    const note = $('[data-role="hint-note"]');
    const shown = hints && view === null && !editing && state && hints.ply === state.ply;
    note.hidden = !shown;
    if (!shown) return;
    const humans = ["black", "white"].filter((c) => state.players[c].human);
    const whose = humans.length === 1 && humans[0] === hints.color ? "your"
      : `${NAMES[hints.color]}'s`;
    const effort = effortText(hints);
    note.textContent = `Hint by the analyst (${analystLabel()}${effort ? `, ${effort}` : ""}): `
      + `each number is ${whose} disc margin at the end after that move, with good play on `
      + `both sides. Best: ${hints.best || "?"}.`;
  }

  function drawHints() {
    for (const m of hints.moves) {
      if (m.eval === null) continue;
      const sq = squares[index(m.square)];
      const span = document.createElement("span");
      span.className = "hint" + (m.square === hints.best ? " best" : "");
      span.textContent = num(m.eval, Math.abs(m.eval) >= 10 || m.exact ? 0 : 1, true);
      span.title = `${num(m.eval, 2, true)} discs for ${NAMES[hints.color]}: `
        + (effortText(m.exact ? { exact: true } : { ...m, selectivity: hints.selectivity })
           || effortText(hints));
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
  // Each error is shown right after the row of the control that caused it (the board's: under
  // the status line), stays until the next action of that control, and goes when an answer to
  // a request from it is not an error.  It is scrolled into view: on a phone the control may be
  // far from the board.
  const pending = new Map();   // request id -> the control that sent it
  const succeeded = new Map(); // request id -> what to do once it is answered without an error
  const errors = new Map();    // control -> its error element
  let acting = null;           // the control whose action runs now

  function generalPlace() {
    return $('[data-role="status"]');
  }

  function placeOf(el) {
    return el.closest(".row, .actions, .nav, label") || el;
  }

  function showError(text, control) {
    const at = control || generalPlace();
    let box = errors.get(at);
    if (!box || !box.isConnected) {
      box = document.createElement("p");
      box.className = "error";
      box.dataset.role = "error";
      box.setAttribute("role", "alert");
      placeOf(at).after(box);
      errors.set(at, box);
    }
    box.textContent = text;
    box.scrollIntoView({ block: "nearest" });
  }

  function clearError(place) {
    const box = errors.get(place);
    if (box) box.remove();
    errors.delete(place);
  }

  // --- actions --------------------------------------------------------------------------
  let exportKind = "ggf";
  const actions = {
    new: newGame,
    rematch: newGame,
    swap: swapColours,
    apply: () => send({ type: "set", ...players(), time: Number($('[data-role="time"]').value) }),
    undo: () => { view = null; setPhase("waiting"); send({ type: "undo" }); },
    pass: () => { setPhase("waiting"); clockBeforeHumanMove(); send({ type: "pass" }); },
    hint: () => send({ type: "hint" }),
    stop: () => send({ type: "stop" }),
    resume: () => send({ type: "resume" }),
    first: () => goTo(0),
    back: () => goTo(shownPly() - 1),
    forward: () => goTo(shownPly() + 1),
    last: () => goTo(state.ply),
    branch,
    analyze,
    share: shareLink,
    edit: startEditing,
    "edit-clear": () => { editing = Array(64).fill("."); drawBoard(); },
    "edit-cancel": () => { editing = null; render(state); },
    "edit-done": finishEditing,
    "export-ggf": () => { exportKind = "ggf"; send({ type: "export" }); },
    "export-moves": () => { exportKind = "moves"; send({ type: "export" }); },
    import: () => {
      // the game changes (and the clock starts again) once the server has taken the record
      const id = send({ type: "import", text: $('[data-role="record"]').value });
      if (id !== null) {
        succeeded.set(id, () => { hints = null; view = null; analysis = null; resetClock(); });
      }
    },
  };
  $$("button[data-action]").forEach((b) => {
    b.addEventListener("click", () => {
      const fn = actions[b.dataset.action];
      if (!fn) return;
      acting = b;
      clearError(acting);   // the next action there: its old error goes
      try {
        fn();
      } finally {
        acting = null;
      }
    });
  });
  document.addEventListener("keydown", (ev) => {
    if (!state || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    const key = { ArrowLeft: "back", ArrowRight: "forward", Home: "first", End: "last" }[ev.key];
    if (!key) return;
    ev.preventDefault();
    actions[key]();
  });
  $('[data-role="graph"]').addEventListener("click", (ev) => {
    if (!state) return;
    const r = ev.currentTarget.getBoundingClientRect();
    goTo(Math.round(((ev.clientX - r.left) / r.width) * Math.max(60, state.ply)));
  });
  $('[data-role="color"]').addEventListener("change", () => { onColor(); saveSettings(); });
  $('[data-role="agent"]').addEventListener("change", () => { renderParams(1); saveSettings(); });
  $('[data-role="agent2"]').addEventListener("change", () => { renderParams(2); saveSettings(); });
  for (const role of ["time", "rules", "clock"]) {
    $(`[data-role="${role}"]`).addEventListener("change", saveSettings);
  }
  $('[data-role="edit-side"]').addEventListener("change", () => { if (editing) drawBoard(); });
  window.addEventListener("hashchange", () => {
    const link = parseLink();
    if (link && state && welcome && linkFragment(state) !== location.hash.replace(/^#/, "")) {
      restoreGame({ ...link, players: null });
    }
  });

  connect();
})();
