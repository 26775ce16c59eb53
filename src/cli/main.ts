import { serveCommand } from './serve.js';

const COMMANDS = `Usage: nereid <command> [flags]

Commands:
  serve    Start the inference server (flags as tritonserver's; see 'nereid serve --help')
  perf     Measure a model's throughput and latency on a running server (perf_analyzer's flags)
  analyze  Search a model's configuration for the best throughput under constraints (Model Analyzer's flags)
  keys     Make API keys for --api-keys-file ('nereid keys add ID SCOPE... [--file FILE]')

Running 'nereid --model-repository DIR …' without a command also serves, as tritonserver does.
`;

/** The `nereid` command. Returns the process exit code: 0 after a clean shutdown, 1 on failure, 2 on bad flags. */
export async function main(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === 'help' || first === '-h') {
    process.stdout.write(COMMANDS);
    return first === undefined ? 2 : 0;
  }
  if (first === 'serve') return serveCommand(rest);
  if (first === 'keys') return (await import('./keys.js')).keysCommand(rest);
  if (first === 'perf') return (await import('./perf.js')).perfCommand(rest);
  if (first === 'analyze') return (await import('./analyze.js')).analyzeCommand(rest);
  if (first.startsWith('--')) return serveCommand(argv);
  process.stderr.write(`nereid: unknown command '${first}'\n\n${COMMANDS}`);
  return 2;
}
