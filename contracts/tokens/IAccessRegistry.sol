// SPDX-License-Identifier: MIT
// The external check a managed token (TokenControls) makes before every movement of its tokens: transfer,
// mint, burn and recovery (docs/platform/tokenization.md "Access registry hook"). Eligibility and lockups
// live behind it; the token itself knows nothing of them.
pragma solidity 0.8.37;

interface IAccessRegistry {
    /// Called by the token before `amount` of token `id` moves from `from` to `to` at `operator`'s request
    /// (`from` zero for a mint, `to` zero for a burn, `id` zero for an ERC-20). Returns this function's
    /// selector to let it happen; reverts (with its own reason) or returns anything else to refuse it.
    /// A recovery arrives with an `operator` holding the token's RECOVERY_ROLE. May record state (a
    /// lockup counts what it received): it is not a view.
    function checkTransfer(address operator, address from, address to, uint256 id, uint256 amount) external returns (bytes4);
}
