export async function analyzeCommand(argv: readonly string[]): Promise<number> {
  void argv;
  return 2;
}
