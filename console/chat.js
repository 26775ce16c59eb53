// A chat with a text model (input text_input, output text_output), streamed through Triton's generate
// extension on this port (POST /v2/models/{m}/generate_stream, the conversation as the `messages`
// parameter), which applies the model's chat template as the OpenAI port does. The OpenAI port is another
// origin, which the page's Content-Security-Policy keeps out.
import { headers, modelPath } from './api.js';
import { el, say } from './dom.js';

/** Most turns sent back to the model: a long conversation is cut from its start. */
const MAX_TURNS = 40;

export const isTextModel = (meta) => meta.inputs.some((i) => i.name === 'text_input' && i.datatype === 'BYTES') && meta.outputs.some((o) => o.name === 'text_output');

export function chatBox(box, name) {
  const history = [];
  const log = el('ol', { class: 'chat', 'aria-label': `Conversation with ${name}` });
  const message = el('textarea', { id: 'chat-message', rows: 3 });
  const maxTokens = el('input', { id: 'chat-max-tokens', value: '64', inputmode: 'numeric' });
  const figures = el('p', { id: 'chat-figures', role: 'status' });
  const form = el('form', { 'aria-label': `Chat with ${name}` },
    el('h3', {}, `Chat with ${name}`), log,
    el('label', {}, 'Message ', message), el('label', {}, 'Max tokens ', maxTokens),
    el('button', { type: 'submit' }, 'Send message'), figures,
    el('h3', {}, 'curl'), el('pre', { 'aria-label': 'curl command', id: 'chat-curl' }));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = message.value.trim();
    const max = Number(maxTokens.value);
    if (text === '' || !Number.isInteger(max) || max < 1) {
      say('Write a message, and give a whole number of tokens of at least 1.', true);
      return;
    }
    message.value = '';
    history.push({ role: 'user', content: text });
    void turn(name, history, max, log, figures);
  });
  box.replaceChildren(form);
}

function line(log, role, text) {
  const body = el('span', { class: 'said' }, text);
  log.append(el('li', { class: `chat-${role}` }, el('strong', {}, role === 'user' ? 'You: ' : 'Model: '), body));
  return body;
}

async function turn(name, history, max, log, figures) {
  line(log, 'user', history.at(-1).content);
  const answer = line(log, 'assistant', '');
  const body = { text_input: '', messages: JSON.stringify(history.slice(-MAX_TURNS)), max_tokens: max, stream: true };
  document.getElementById('chat-curl').textContent = `curl -sN '${location.origin}${modelPath(name)}/generate_stream' -d '${JSON.stringify(body).replace(/'/g, `'\\''`)}'`;
  figures.textContent = 'Generating…';
  const started = performance.now();
  let first = 0;
  try {
    const last = await stream(name, body, (piece) => {
      if (first === 0) first = performance.now();
      answer.textContent += piece;
    });
    history.push({ role: 'assistant', content: answer.textContent });
    const secs = (performance.now() - first) / 1000;
    const tokens = last.completion_tokens ?? 0;
    figures.textContent = `${tokens} tokens, first after ${(first - started).toFixed(0)} ms, ${secs > 0 ? (tokens / secs).toFixed(1) : '–'} tokens/s, finish reason ${last.finish_reason ?? '?'}.`;
  } catch (e) {
    history.pop();
    answer.parentElement.remove();
    say(`${name} refused the message: ${e.message}`, true);
  }
}

/** Reads the server-sent events of generate_stream, handing each piece of text on; resolves with the last event. */
async function stream(name, body, piece) {
  const res = await fetch(`${modelPath(name)}/generate_stream`, { method: 'POST', headers: headers(true), body: JSON.stringify(body), cache: 'no-store' });
  if (!res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const text = await res.text();
    let message = text;
    try {
      message = JSON.parse(text).error ?? text;
    } catch { /* not JSON: the text as it is */ }
    throw new Error(message || res.statusText);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let last = {};
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return last;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (data === '') continue;
      last = JSON.parse(data);
      if (last.error !== undefined) throw new Error(last.error);
      if (typeof last.text_output === 'string' && last.text_output !== '') piece(last.text_output);
    }
  }
}
