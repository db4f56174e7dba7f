// The deck derivation of docs/shuffle.md against the golden vectors the server's engine and the
// standalone verifier are held to (tests/golden/shuffle_vectors.json, tests/test_shuffle.py), and
// the canonical decks of each game.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { readGolden } from "./golden.js";
import {
  commitmentOf,
  hanafudaDeck,
  rummyDeck,
  seedMatchesCommitment,
  shuffleCards,
  standardDeck,
} from "../src/index.js";

interface Vector {
  readonly server_seed: string;
  readonly client_seeds: readonly string[];
  readonly round: number;
  readonly purpose: string;
  readonly jokers: number;
  readonly commitment: string;
  readonly deck: readonly string[];
}

const VECTORS: readonly Vector[] = readGolden<readonly Vector[]>("shuffle_vectors.json");

test("every golden vector's deck and commitment are derived as the server derives them", async () => {
  assert.ok(VECTORS.length >= 4);
  for (const v of VECTORS) {
    const seeds = { serverSeed: v.server_seed, clientSeeds: v.client_seeds };
    assert.equal(await commitmentOf(v.server_seed), v.commitment);
    assert.equal(await seedMatchesCommitment(v.server_seed, v.commitment.toUpperCase()), true);
    const deck = await shuffleCards(standardDeck(v.jokers), seeds, v.round, v.purpose);
    assert.deepEqual(deck, v.deck, `${v.server_seed.slice(0, 8)} ${v.purpose}`);
  }
});

test("another seed, a client seed, the round or the purpose give another deck", async () => {
  const v = VECTORS[1]!;
  const seeds = { serverSeed: v.server_seed, clientSeeds: v.client_seeds };
  const base = await shuffleCards(standardDeck(), seeds, v.round, v.purpose);
  const changed = [
    shuffleCards(
      standardDeck(),
      { ...seeds, serverSeed: "ff" + v.server_seed.slice(2) },
      1,
      "deal",
    ),
    shuffleCards(standardDeck(), { ...seeds, clientSeeds: ["alicf"] }, 1, "deal"),
    shuffleCards(standardDeck(), seeds, 2, "deal"),
    shuffleCards(standardDeck(), seeds, 1, "redeal-1"),
  ];
  for (const deck of await Promise.all(changed)) {
    assert.notDeepEqual(deck, base);
    assert.deepEqual([...deck].sort(), [...base].sort()); // a permutation all the same
  }
});

test("a tampered seed does not match its commitment, and a seed that is not hex is refused", async () => {
  const v = VECTORS[0]!;
  assert.equal(await seedMatchesCommitment("01" + v.server_seed.slice(2), v.commitment), false);
  assert.equal(await seedMatchesCommitment("zz", v.commitment), false);
  const seed = "5eed".repeat(16);
  const expected = createHash("sha256").update(Buffer.from(seed, "hex")).digest("hex");
  assert.equal(await commitmentOf(seed), expected);
});

test("the canonical decks: 52 (+ jokers), Hanafuda's 48 by month, Rummy's 108", () => {
  const standard = standardDeck(2);
  assert.equal(standard.length, 54);
  assert.deepEqual(standard.slice(0, 3), ["AS", "2S", "3S"]);
  assert.deepEqual(standard.slice(-3), ["KC", "JK1", "JK2"]);
  const hanafuda = hanafudaDeck();
  assert.equal(new Set(hanafuda).size, 48);
  for (let month = 1; month <= 12; month++)
    assert.equal(hanafuda.filter((c) => c.match(/^\d+/)?.[0] === String(month)).length, 4);
  const rummy = rummyDeck();
  assert.equal(new Set(rummy).size, 108);
  assert.deepEqual([rummy[0], rummy[52], rummy[104], rummy[107]], ["AS1", "AS2", "JK1", "JK4"]);
});
