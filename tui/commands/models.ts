import { invalid } from '../../engine/errors.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { EMBEDDING_MODELS, type EmbeddingModelName } from '../../engine/embed/embedder.js';
import { downloadFailure, modelFolder, modelPresent, parseModelName, selectedModel } from '../../engine/embed/model-layout.js';
import { isTerminal } from '../../engine/cli/std-write.js';

const HELP = `
  Usage
    svc models [list]
    svc models pull [<model>]
    svc models import <folder-or-archive> [--model <model>]
    svc models remove <model>

  The embedding models hybrid recall uses, in <store>/models/ (for the hub's host: --path <its
  data folder>). pull fetches the model now: from the mirror SVC_MODEL_BASE_URL names (archives
  named as fastembed's, e.g. fast-bge-small-en-v1.5.tar.gz), else from the Hugging Face Hub at a
  pinned revision (HF_ENDPOINT for a mirror of the Hub, HF_TOKEN for a token), every file checked
  against the hashes the Hub states, a cut-off download resumed; else from fastembed's archive
  bucket. import installs a copy made on another machine (the model folder, or a .tar.gz of it).
  The default model is bge-small-en-v1.5 (SVC_EMBED_MODEL selects another).

  Flags
    --model <m>    the model an import is (default: the selected one)`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { model: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const [sub = 'list', ...args] = cli.input;
  const root = resolveStoreRoot(cli.flags.path);
  const supply = () => import('../../engine/embed/model-supply.js');
  const probe = async (model: EmbeddingModelName) => (await import('../../engine/embed/fastembed-embedder.js')).modelProbe(model);

  switch (sub) {
    case 'list':
    case 'ls': {
      if (args.length) throw invalid('usage: svc models list');
      const { folderBytes, readProvenance } = await supply();
      const selected = selectedModel();
      const models = EMBEDDING_MODELS.map((name) => {
        const folder = modelFolder(root, name);
        const provenance = readProvenance(folder);
        const failed = downloadFailure(root, name);
        return {
          name,
          selected: name === selected,
          present: modelPresent(root, name),
          folder,
          bytes: folderBytes(folder),
          ...(provenance
            ? {
                source: provenance.source,
                from: provenance.from,
                ...(provenance.revision ? { revision: provenance.revision } : {}),
                installed_at: provenance.at,
              }
            : {}),
          ...(failed ? { last_failure: { at: failed.at, error: failed.error, next_try: failed.retryAt } } : {}),
        };
      });
      out.result({ root, models }, () =>
        models
          .map((m) => {
            const state = m.present
              ? `${(m.bytes / 1e6).toFixed(1)} MB${m.source ? `, ${m.source === 'huggingface' ? `Hugging Face ${m.revision?.slice(0, 12)}` : `${m.source} ${m.from}`}` : ', placed by hand'}`
              : 'not installed';
            const failure = m.last_failure ? `\n    last download failed at ${m.last_failure.at}: ${m.last_failure.error}` : '';
            return `${m.selected ? '*' : ' '} ${m.name.padEnd(20)} ${state}\n    ${m.folder}${failure}`;
          })
          .join('\n'),
      );
      return 0;
    }
    case 'pull': {
      if (args.length > 1) throw invalid('usage: svc models pull [<model>]');
      const model = args[0] ? parseModelName(args[0]) : selectedModel();
      const { pullModel } = await supply();
      const p = await pullModel(root, model, await probe(model), { progress: isTerminal(2) && !out.json });
      out.result(
        p,
        () =>
          `${model} is in ${modelFolder(root, model)} (${p.source === 'huggingface' ? `Hugging Face ${p.from} at ${p.revision?.slice(0, 12)}` : p.from})`,
      );
      return 0;
    }
    case 'import': {
      if (args.length !== 1) throw invalid('usage: svc models import <folder-or-archive> [--model <model>]');
      const model = cli.flags.model ? parseModelName(cli.flags.model) : selectedModel();
      const { importModel } = await supply();
      const p = await importModel(root, model, args[0]!, await probe(model));
      out.result(p, () => `${model} imported into ${modelFolder(root, model)}`);
      return 0;
    }
    case 'remove':
    case 'rm': {
      if (args.length !== 1) throw invalid('usage: svc models remove <model>');
      const model = parseModelName(args[0]!);
      const { removeModel } = await supply();
      const removed = removeModel(root, model);
      out.result({ model, removed }, () => (removed ? `Removed ${model} from ${modelFolder(root, model)}` : `${model} was not installed`));
      return 0;
    }
    default:
      throw invalid(`unknown models subcommand "${sub}" (list, pull, import, remove)`);
  }
}
