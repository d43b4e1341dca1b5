// The cap table's arithmetic (docs/platform/rwa.md "Holders, eligibility, lockups and the cap table"): the
// movements read from a token's own ABI events (ERC-20 and ERC-721 Transfer, ERC-1155 TransferSingle and
// TransferBatch, one movement per batch entry), their storage order, and the balances folded from them.
import t from 'tap';
import { encodeAbiParameters, encodeEventTopics, type Abi, type Hex, type Log } from 'viem';
import { foldBalances, movementKey, movementsOf, type Movement } from '../../../api/rwa/holders/cap-table.ts';
import { tokenAbi } from '../../../api/tokenization/token-calls.ts';

const a = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Hex;
const ZERO = a(0);
const TOKEN = a(0xabc);
/** A balance map as [holder, balance] pairs in address order (a Map keeps insertion order). */
const table = (m: Map<Hex, bigint>) => [...m].sort(([x], [y]) => (x < y ? -1 : 1));

/** One log of `abi`'s event `name` as eth_getLogs answers it. */
function logOf(abi: Abi, name: string, args: Record<string, unknown>, block: bigint, logIndex: number): Log {
  const event = abi.find((x) => x.type === 'event' && x.name === name) as Extract<Abi[number], { type: 'event' }>;
  const topics = encodeEventTopics({ abi: [event], eventName: name, args } as never) as [Hex, ...Hex[]];
  const data = event.inputs.filter((i) => !i.indexed);
  return {
    address: TOKEN, topics, data: encodeAbiParameters(data, data.map((i) => args[i.name!])),
    blockNumber: block, logIndex, blockHash: `0x${'11'.repeat(32)}`, transactionHash: `0x${'22'.repeat(32)}`, transactionIndex: 0, removed: false,
  } as Log;
}

t.test('ERC-20: mints, transfers and burns fold into balances; zero balances leave the table', async (t) => {
  const abi = tokenAbi('erc20');
  const logs = [
    logOf(abi, 'Transfer', { from: ZERO, to: a(1), value: 100n }, 5n, 0),
    logOf(abi, 'Transfer', { from: a(1), to: a(2), value: 30n }, 6n, 2),
    logOf(abi, 'Transfer', { from: a(2), to: ZERO, value: 30n }, 7n, 1),
    logOf(abi, 'Transfer', { from: ZERO, to: a(3), value: 0n }, 7n, 3),
  ];
  const moves = movementsOf('erc20', abi, logs);
  t.same(moves.map((m) => [m.block, m.log_index, m.sub, m.from, m.to, m.id, m.amount]), [
    ['5', 0, 0, ZERO, a(1), '0', '100'], ['6', 2, 0, a(1), a(2), '0', '30'], ['7', 1, 0, a(2), ZERO, '0', '30'], ['7', 3, 0, ZERO, a(3), '0', '0'],
  ], 'one movement per Transfer, id 0');
  t.same(table(foldBalances(moves)), [[a(1), 70n]], 'a(2) burned all it got; a zero mint adds no holder');
  t.same(table(foldBalances(moves.filter((m) => BigInt(m.block) <= 6n))), [[a(1), 70n], [a(2), 30n]], 'the table at block 6');
});

t.test('ERC-721 and ERC-1155: per token id, one movement per batch entry', async (t) => {
  const nft = tokenAbi('erc721');
  const nftMoves = movementsOf('erc721', nft, [
    logOf(nft, 'Transfer', { from: ZERO, to: a(1), tokenId: 7n }, 1n, 0),
    logOf(nft, 'Transfer', { from: a(1), to: a(2), tokenId: 7n }, 2n, 0),
    logOf(nft, 'Transfer', { from: ZERO, to: a(1), tokenId: 8n }, 2n, 1),
  ]);
  t.same(nftMoves.map((m) => [m.id, m.amount]), [['7', '1'], ['7', '1'], ['8', '1']], 'an NFT moves as amount 1 of its id');
  t.same(table(foldBalances(nftMoves)), [[a(1), 1n], [a(2), 1n]]);
  t.same(table(foldBalances(nftMoves, 7n)), [[a(2), 1n]], 'only token id 7');

  const multi = tokenAbi('erc1155');
  const moves = movementsOf('erc1155', multi, [
    logOf(multi, 'TransferBatch', { operator: a(9), from: ZERO, to: a(1), ids: [1n, 2n], values: [10n, 20n] }, 3n, 4),
    logOf(multi, 'TransferSingle', { operator: a(9), from: a(1), to: a(2), id: 2n, value: 5n }, 4n, 0),
  ]);
  t.same(moves.map((m) => [m.log_index, m.sub, m.id, m.amount]), [[4, 0, '1', '10'], [4, 1, '2', '20'], [0, 0, '2', '5']], 'a batch is one movement per entry, numbered by sub');
  t.same(table(foldBalances(moves, 2n)), [[a(1), 15n], [a(2), 5n]]);
  t.same(table(foldBalances(moves, 1n)), [[a(1), 10n]]);
});

t.test('a history that makes a balance negative is incomplete and refused; upper case is one holder', async (t) => {
  t.throws(() => foldBalances([{ from: a(1), to: a(2), id: '0', amount: '1' }]), /negative/);
  const upper = a(1).toUpperCase().replace('0X', '0x');
  t.same(table(foldBalances([{ from: ZERO, to: upper, id: '0', amount: '3' }, { from: a(1), to: a(2), id: '0', amount: '1' }])), [[a(1), 2n], [a(2), 1n]]);
});

t.test('storage keys sort in chain order: block, then log index, then batch entry', async (t) => {
  const m = (block: string, log_index: number, sub: number): Pick<Movement, 'block' | 'log_index' | 'sub'> => ({ block, log_index, sub });
  const keys = [m('10', 0, 0), m('9', 12, 0), m('9', 2, 1), m('9', 2, 0), m('100', 0, 0)].map((x) => movementKey('tok_1', x));
  t.same([...keys].sort(), [m('9', 2, 0), m('9', 2, 1), m('9', 12, 0), m('10', 0, 0), m('100', 0, 0)].map((x) => movementKey('tok_1', x)));
});
