// SPDX-License-Identifier: MIT
// A managed ERC-20 (docs/platform/tokenization.md "Contracts and roles"): OpenZeppelin's ERC20 with burn and
// EIP-2612 permit, every movement checked by TokenControls, mints counted against the minter's policy.
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Burnable} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Burnable.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {TokenControls} from "./TokenControls.sol";

contract ManagedERC20 is ERC20, ERC20Burnable, ERC20Permit, TokenControls {
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_, address admin, address forwarder)
        ERC20(name_, symbol_)
        ERC20Permit(name_)
        TokenControls(admin, forwarder)
    {
        _decimals = decimals_;
    }

    /// Mints `amount` to `to`: MINTER_ROLE, within the caller's mint policy.
    function mint(address to, uint256 amount) external {
        _useMintAllowance(amount);
        _mint(to, amount);
    }

    /// Moves `lost`'s whole balance to `to`, even while paused or under the treasury rule; `to` must pass
    /// the access list and the registry. Returns the amount moved.
    function recover(address lost, address to) external onlyRole(RECOVERY_ROLE) returns (uint256 amount) {
        amount = balanceOf(lost);
        if (amount == 0) revert NothingToRecover(lost);
        uint256[] memory ids = new uint256[](1);
        uint256[] memory amounts = new uint256[](1);
        amounts[0] = amount;
        _recover(lost, to, ids, amounts, _moveBalance);
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function _moveBalance(address lost, address to, uint256[] memory, uint256[] memory amounts) private {
        _transfer(lost, to, amounts[0]);
    }

    function _update(address from, address to, uint256 value) internal override {
        _checkMove(from, to, 0, value);
        super._update(from, to, value);
    }

    function _msgSender() internal view override(Context, TokenControls) returns (address) {
        return TokenControls._msgSender();
    }

    function _msgData() internal view override(Context, TokenControls) returns (bytes calldata) {
        return TokenControls._msgData();
    }

    function _contextSuffixLength() internal view override(Context, TokenControls) returns (uint256) {
        return TokenControls._contextSuffixLength();
    }
}
