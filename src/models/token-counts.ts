import type { Parameters } from '../inference/index.js';
import type { ModelStatistics } from '../observability/statistics.js';

/**
 * Text models (llama.cpp, an engine behind the OpenAI gateway) report a request's token counts on its last
 * response as the parameters prompt_tokens and completion_tokens; the statistics add them up for the
 * nereid_*_token_count metrics. Models that report none cost one property read.
 */
export function countTokens(stats: ModelStatistics, parameters: Parameters | undefined): void {
  const generated = parameters?.['completion_tokens'];
  if (typeof generated !== 'number') return;
  const prompt = parameters!['prompt_tokens'];
  stats.recordTokens(typeof prompt === 'number' ? prompt : 0, generated);
}
