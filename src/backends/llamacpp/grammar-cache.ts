import type { Llama, LlamaGrammar } from 'node-llama-cpp';
import { readResponseFormat } from './response-format.js';

/** Distinct response formats whose grammars a model keeps: clients send few schemas, each many times. */
const MAX_GRAMMARS = 32;

/**
 * The grammars of one model's response formats, built on first use and kept by the parameter's text, so that
 * a schema sent again costs neither its JSON parse, its check nor its conversion to a grammar (which llama.cpp
 * parses natively). Least recently used first out. A grammar is shared by every generation that uses it: each
 * generation keeps its own grammar state. A format that is refused is not kept.
 */
export class GrammarCache {
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();
  private json: Promise<LlamaGrammar> | undefined;

  constructor(private readonly llama: Llama) {}

  /**
   * The grammar for a `response_format` parameter's text, or null for plain text; throws INVALID_ARG at once
   * for a format that cannot be honoured.
   */
  grammarFor(text: unknown): Promise<LlamaGrammar> | null {
    if (typeof text === 'string') {
      const hit = this.grammars.get(text);
      if (hit !== undefined) {
        this.grammars.delete(text);
        this.grammars.set(text, hit);
        return hit;
      }
    }
    const format = readResponseFormat(text);
    if (format.type === 'text') return null;
    if (format.type === 'json_object') return this.jsonGrammar();
    // The schema is checked against what the converter knows (response-format.ts); its generic types cannot say so.
    const grammar: Promise<LlamaGrammar> = this.llama.createGrammarForJsonSchema(format.schema as never);
    this.keep(text as string, grammar);
    return grammar;
  }

  /** llama.cpp's JSON grammar, whose root is an object: what OpenAI's json_object asks for. */
  private jsonGrammar(): Promise<LlamaGrammar> {
    if (this.json === undefined) {
      this.json = this.llama.getGrammarFor('json');
      this.json.catch(() => (this.json = undefined));
    }
    return this.json;
  }

  private keep(key: string, grammar: Promise<LlamaGrammar>): void {
    if (this.grammars.size >= MAX_GRAMMARS) this.grammars.delete(this.grammars.keys().next().value!);
    this.grammars.set(key, grammar);
    grammar.catch(() => this.grammars.delete(key));
  }
}
