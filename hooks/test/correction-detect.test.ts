import { describe, expect, it } from 'vitest';
import { detectCorrection } from '../handlers/correction.js';

// Real-world style prompts on each side of the line. Measured on this set (run with
// DEBUG_CORRECTIONS=1 to print the figures and every miss):
//   corrections: 57 of 60 detected, recall 0.95
//   ordinary:    1 of 68 flagged ("Actually it is pretty fast already, let's keep it", which does
//                correct the agent's premise), false-positive rate 0.015, precision 0.98
// The first 52 + 56 prompts were written while the rules were tuned (all right there). The last
// 8 + 12 of each list were written afterwards as a check on over-fitting: on them the rules first
// scored 5 of 8 and 2 false alarms of 12; "why would you" was then dropped from the reproach rule
// (it is as often an honest question), which fixed one false alarm. Expect real traffic to sit
// nearer the held-out figures than the tuned ones. The assertions keep a margin (recall >= 0.9,
// at most 2 false positives) so that one borderline prompt does not turn the suite red.

const CORRECTIONS: string[] = [
  'no, use pnpm instead',
  'No. Use the existing logger, and remove the console.log calls',
  "that's wrong, the timeout is in milliseconds not seconds",
  'That is not what I asked for. I wanted a bar chart.',
  "don't add comments to every line",
  "Don't use default exports in this codebase",
  'actually, it should be a POST endpoint',
  'Actually the config lives in ~/.config/app, not in the repo',
  'I told you to use tabs',
  "I already told you we don't use lodash",
  'stop adding emojis to commit messages',
  'Stop apologizing and just fix it',
  'not jest, vitest',
  'Not the staging DB — the local one.',
  "you're wrong, Array.prototype.at exists since Node 16.6",
  'nope, that breaks the build',
  'No no no, revert that',
  'why did you delete the migration file?',
  'You forgot to update the changelog again',
  'you broke the login page',
  "That's not how we handle errors here. Use the Result type.",
  'wrong file, I meant src/api/client.ts',
  'I said Python 3.11, not 3.12',
  "Please don't ever commit directly to main",
  'Never use `any` in this repo',
  'undo that change',
  "That's incorrect: the API returns 204, not 200",
  'You should have run the tests before committing',
  'use the factory function instead.',
  'we use snake_case for database columns, not camelCase',
  "It's `yarn`, not `npm`",
  'from now on, always run prettier before committing',
  'You misunderstood: the cache should be per user, not global',
  "that's not what I meant, keep the old function and add a new one",
  'I asked you not to touch the tests',
  "Didn't I say to keep the public API stable?",
  'no, the port is 5432',
  'This is wrong. The date should be UTC.',
  'please stop using relative imports',
  "you shouldn't have changed the lockfile",
  'Wrong approach — we never mock the database in integration tests',
  'No, put it in the utils folder',
  'It should be `const`, not `let`',
  "don't do that again",
  'Revert your last edit, it broke the formatting',
  'You keep using var. We use const.',
  'in this repo we always use named exports',
  'no — the tests go next to the source files',
  'Why are you using moment? We switched to date-fns.',
  "That's the wrong branch, I said develop",
  'Hmm, that is not right. The discount applies before tax.',
  'ok but you ignored my instruction about the error messages',
  // Written after the rules above were tuned, as a check on over-fitting.
  "That's not the right approach, use a queue",
  'You used the wrong env var for the API key',
  "We don't use semicolons",
  'Never commit secrets; add a pre-commit hook that checks for them',
  'Please use double quotes like the rest of the file',
  "That function already exists in utils, don't duplicate it",
  'no need for a new file, put it in helpers.ts',
  'nah, keep the old name',
];

const ORDINARY: string[] = [
  // A reminder for the task at hand: nothing was wrong and there is no standing rule to keep.
  "don't forget to add tests",
  'no worries, take your time',
  // Questions about correctness ask; they do not tell.
  'Is this wrong?',
  // "wrong" as an adjective inside a request.
  'fix the wrong import in utils.ts',
  // "instead of" names both sides: a plain request, not a reaction to what the agent did.
  'use pnpm instead of npm in the new module',
  'Add a button to the settings page',
  'Why does this function return undefined?',
  'Can you explain how the cache works?',
  'No need to add docs for this one',
  // "stop" with an object is an action on a process.
  'Stop the dev server and restart it with --inspect',
  "What's wrong with this query?",
  'The tests are failing on CI, can you take a look?',
  'Write a function that checks whether a string is not empty',
  'Refactor the parser. Make sure it handles nested brackets.',
  'Please update the README with the new install steps',
  'Use a Map instead of an object for the lookup table',
  "no problem, let's move on to the next task",
  // "actually" that adds a request rather than correcting.
  'Actually, can you also add a loading spinner?',
  'I think we should add retries to the HTTP client',
  'Is it wrong to use any here?',
  'Could you check whether the migration is correct?',
  'Delete the unused helper in src/lib/format.ts',
  'Add an error message for when the password is wrong',
  'Make the stop button red',
  'Run the tests and tell me what fails',
  'Remind me how to set up the database locally',
  "Don't worry about the lint warnings for now",
  'Thanks, that works!',
  'Great, now add pagination to the list endpoint',
  'Handle the case where the user is not logged in',
  'Why do we need both a cache and a queue here?',
  "Add a 'not found' page",
  'Rename getUser to fetchUser everywhere',
  'Write tests for the wrong-password flow',
  'Implement undo for the text editor',
  'Add a git revert step to the release script',
  'Explain the difference between git reset --hard and git revert',
  // Quoted text (an error message) is masked before the rules run.
  'The error says "you are wrong to call this twice, do not retry", what does it mean?',
  'Yes, go ahead',
  'Ok, now deploy it to staging',
  'Show me the last 10 commits',
  'Can you stop the container named redis?',
  "Let's not use a database for this prototype; a JSON file is enough",
  'Make sure errors are not swallowed in the worker',
  'Convert the callbacks to async/await instead of promise chains',
  // "don't" inside a subordinate clause.
  "Add a comment explaining why we don't retry on 4xx",
  "The build doesn't work on Windows, can you investigate?",
  "Review my PR and tell me what's wrong",
  "Never mind, let's do the API first",
  'No, thanks',
  'Add a --no-verify flag to the commit command',
  // A failure report is iteration, not a lesson to keep.
  "That didn't work, I still get the same error",
  'no',
  "No, that's fine",
  // Pasted logs and code are masked.
  'Here is the log:\n```\nError: you broke the contract. Stop retrying.\nthat is wrong\n```\nwhat does it mean?',
  'Add a `--stop-on-error` flag and document it',
  // Written after the rules were tuned, as a check on over-fitting.
  'Can you make it not crash when the file is missing?',
  'Stop words should be removed before indexing',
  "Don't-care values should be treated as null",
  "Actually it is pretty fast already, let's keep it",
  'Why would you use a WeakMap here? Just curious',
  'No rush, but could you also look at the flaky test?',
  'I asked for a summary earlier, can you expand on point 2?',
  'The function should never return null',
  "Write a test that checks users cannot delete other users' posts",
  'Why did the build fail?',
  'Refactor the parser, but keep the public API unchanged',
  'Summarize what you changed',
];

describe('detectCorrection', () => {
  it('finds corrections with high recall and few false positives', () => {
    const missed = CORRECTIONS.filter((p) => detectCorrection(p) === null);
    const flagged = ORDINARY.filter((p) => detectCorrection(p) !== null);
    const recall = (CORRECTIONS.length - missed.length) / CORRECTIONS.length;
    const truePositives = CORRECTIONS.length - missed.length;
    const precision = truePositives / (truePositives + flagged.length);
    if (process.env.DEBUG_CORRECTIONS) {
      console.log({
        recall,
        precision,
        fpRate: flagged.length / ORDINARY.length,
        missed,
        flagged: flagged.map((p) => [p, detectCorrection(p)]),
      });
    }
    expect(CORRECTIONS.length).toBeGreaterThanOrEqual(40);
    expect(ORDINARY.length).toBeGreaterThanOrEqual(40);
    expect(recall).toBeGreaterThanOrEqual(0.9);
    expect(flagged.length).toBeLessThanOrEqual(2);
    expect(precision).toBeGreaterThanOrEqual(0.95);
  });

  it('tells conventions from corrections and quotes the sentence that fired', () => {
    expect(detectCorrection('from now on, always run prettier before committing')).toMatchObject({ kind: 'convention' });
    expect(detectCorrection('Looks good. No need to change the tests.')).toBeNull();
    const m = detectCorrection('Thanks. I told you to use tabs. Also add a test.');
    expect(m).toMatchObject({ kind: 'correction', rule: 'i-told-you', excerpt: 'I told you to use tabs.' });
  });

  it('tells "revert that" from an instruction to revert a named thing', () => {
    for (const p of [
      'No no no, revert that',
      'undo that change',
      'revert those edits, they broke the build',
      'Roll that back.',
      'revert it',
    ]) {
      expect(detectCorrection(p), p).toMatchObject({ kind: 'correction' });
    }
    for (const p of [
      'RUN_TOOL revert that file',
      'Revert this file to what main has',
      'undo this migration, we are dropping the feature',
      'revert those commits on the release branch',
    ]) {
      expect(detectCorrection(p), p).toBeNull();
    }
  });

  it('ignores what is not a prompt', () => {
    expect(detectCorrection('')).toBeNull();
    expect(detectCorrection('   \n  ')).toBeNull();
    expect(detectCorrection(42 as unknown as string)).toBeNull();
    expect(detectCorrection(`${'Please build the dashboard. '.repeat(80)}That's wrong.`)).toBeNull(); // past the first 1,500 characters
  });
});
