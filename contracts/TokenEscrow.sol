// SPDX-License-Identifier: MIT
// Escrow of ERC-20 tokens between two parties (docs/platform/escrows.md). One contract per chain holds
// many escrows, each under its payer's address and a bytes32 id, used once: keyed by the payer, an id
// seen in a pending deposit cannot be taken first by anyone else (a front-run deposit under the same id
// lands under the front-runner's own address). The payer deposits (after approving this contract),
// only the payer releases to the payee, the payee may refund the payer at any time, and the payer may
// take the funds back from `refundableAfter` on. No owner, no admin key, no upgrade: what the code says
// is all anyone can do with the funds, and anyone can read it and each escrow's state on chain.
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

contract TokenEscrow is ReentrancyGuard {
    using SafeERC20 for IERC20;

    enum State {
        None,
        Funded,
        Released,
        Refunded
    }

    struct Escrow {
        IERC20 token;
        address payer;
        address payee;
        uint256 amount;
        uint64 refundableAfter;
        State state;
    }

    mapping(address => mapping(bytes32 => Escrow)) private _escrows;

    // Every event names the escrow by (id, payer): topic 1 the id, topic 2 the payer.
    event Deposited(bytes32 indexed id, address indexed payer, address indexed payee, address token, uint256 amount, uint64 refundableAfter);
    event Released(bytes32 indexed id, address indexed payer, address indexed payee, uint256 amount);
    event Refunded(bytes32 indexed id, address indexed payer, uint256 amount, address by);

    error EscrowExists(bytes32 id);
    error NotFunded(bytes32 id);
    error NotPayerOrPayee(bytes32 id);
    error NotRefundableYet(bytes32 id, uint64 refundableAfter);
    error ZeroAmount();
    error InvalidParty();
    error AmountNotReceived(uint256 expected, uint256 received);

    /// Opens the caller's escrow `id`: pulls `amount` of `token` from the caller (the payer) into this contract.
    function deposit(bytes32 id, IERC20 token, address payee, uint256 amount, uint64 refundableAfter) external nonReentrant {
        if (amount == 0) revert ZeroAmount();
        if (payee == address(0) || payee == msg.sender || address(token) == address(0)) revert InvalidParty();
        if (_escrows[msg.sender][id].state != State.None) revert EscrowExists(id);
        _escrows[msg.sender][id] = Escrow(token, msg.sender, payee, amount, refundableAfter, State.Funded);
        // A token that takes a fee on transfer would leave less than `amount` here: refused, so the
        // escrow always holds exactly what it says.
        uint256 before = token.balanceOf(address(this));
        token.safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert AmountNotReceived(amount, received);
        emit Deposited(id, msg.sender, payee, address(token), amount, refundableAfter);
    }

    /// Pays the caller's funded escrow `id` to its payee: only its payer can name it.
    function release(bytes32 id) external nonReentrant {
        Escrow storage e = _escrows[msg.sender][id];
        if (e.state != State.Funded) revert NotFunded(id);
        e.state = State.Released;
        e.token.safeTransfer(e.payee, e.amount);
        emit Released(id, msg.sender, e.payee, e.amount);
    }

    /// Returns `payer`'s funded escrow `id` to the payer: by the payee at any time, by the payer from `refundableAfter` on.
    function refund(address payer, bytes32 id) external nonReentrant {
        Escrow storage e = _escrows[payer][id];
        if (e.state != State.Funded) revert NotFunded(id);
        if (msg.sender != e.payee) {
            if (msg.sender != e.payer) revert NotPayerOrPayee(id);
            if (block.timestamp < e.refundableAfter) revert NotRefundableYet(id, e.refundableAfter);
        }
        e.state = State.Refunded;
        e.token.safeTransfer(e.payer, e.amount);
        emit Refunded(id, e.payer, e.amount, msg.sender);
    }

    /// `payer`'s escrow `id` as stored; state None (0) and zero fields when it was never deposited.
    function escrowOf(address payer, bytes32 id) external view returns (Escrow memory) {
        return _escrows[payer][id];
    }
}
