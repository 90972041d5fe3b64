import { invalid } from '../../engine/errors.js';
import { feedback, parseFeedbackBatch, FEEDBACK_SIGNALS, type FeedbackItem, type FeedbackSignal } from '../../engine/ops/feedback.js';
import { systemContext } from '../../engine/ops/context.js';
import { makeOutput, openStore, parseArgs, parseJsonFlag } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc feedback <id> <signal>
    svc feedback --batch '[{"id": "ENG-...", "signal": "positive"}, ...]'

  Signals: positive (strengthens future recall), negative (weakens it), neutral.
  A batch applies all of its items or none.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { batch: { type: 'string' } });
  const out = makeOutput(cli.flags);
  let items: FeedbackItem[];
  if (cli.flags.batch !== undefined) {
    if (cli.input.length) throw invalid('give either <id> <signal> or --batch, not both');
    items = parseFeedbackBatch(parseJsonFlag(cli.flags.batch, 'batch'));
    if (items.length === 0) throw invalid('--batch is empty');
  } else {
    const [id, signal, ...extra] = cli.input;
    if (!id || !signal || extra.length) throw invalid('usage: svc feedback <id> <signal> (or --batch <json>)');
    if (!FEEDBACK_SIGNALS.includes(signal as FeedbackSignal)) {
      throw invalid(`signal must be one of ${FEEDBACK_SIGNALS.join(', ')} (got "${signal}")`);
    }
    items = [{ id, signal: signal as FeedbackSignal }];
  }
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const updated = await feedback(store, items, systemContext);
    out.result({ recorded: items.length, engrams: updated.map((e) => ({ id: e.id, feedback_signals: e.feedback_signals })) }, () =>
      items.map((i) => `Recorded ${i.signal} feedback on ${i.id}`).join('\n'),
    );
    return 0;
  } finally {
    store.close();
  }
}
