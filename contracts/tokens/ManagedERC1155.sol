// SPDX-License-Identifier: MIT
// A managed ERC-1155 (docs/platform/tokenization.md "Contracts and roles"): OpenZeppelin's ERC1155 with burn,
// operator transfers through the standard approvals, every movement of every id checked by TokenControls,
// mints counted by amount (all ids together) against the minter's policy.
pragma solidity 0.8.37;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {ERC1155Burnable} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155Burnable.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {TokenControls} from "./TokenControls.sol";

contract ManagedERC1155 is ERC1155, ERC1155Burnable, TokenControls {
    event URISet(string uri);

    constructor(string memory uri_, address admin, address forwarder) ERC1155(uri_) TokenControls(admin, forwarder) {}

    /// Mints `amount` of token `id` to `to` (a contract recipient must accept it): MINTER_ROLE, within the
    /// caller's mint policy.
    function mint(address to, uint256 id, uint256 amount, bytes calldata data) external {
        _useMintAllowance(amount);
        _mint(to, id, amount, data);
    }

    /// Moves `lost`'s whole balance of each of `ids` to `to`, even while paused or under the treasury rule;
    /// `to` must pass the access list and the registry.
    function recover(address lost, address to, uint256[] calldata ids) external onlyRole(RECOVERY_ROLE) {
        uint256[] memory amounts = new uint256[](ids.length);
        for (uint256 i; i < ids.length; ++i) {
            amounts[i] = balanceOf(lost, ids[i]);
            if (amounts[i] == 0) revert NothingToRecover(lost);
        }
        _recover(lost, to, ids, amounts, _moveBalances);
    }

    /// Sets the URI template of every token id (ERC-1155 `{id}` substitution).
    function setURI(string calldata uri_) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setURI(uri_);
        emit URISet(uri_);
    }

    function supportsInterface(bytes4 interfaceId) public view override(ERC1155, AccessControl) returns (bool) {
        return super.supportsInterface(interfaceId);
    }

    function _moveBalances(address lost, address to, uint256[] memory ids, uint256[] memory amounts) private {
        _safeBatchTransferFrom(lost, to, ids, amounts, "");
    }

    function _update(address from, address to, uint256[] memory ids, uint256[] memory values) internal override {
        for (uint256 i; i < ids.length; ++i) _checkMove(from, to, ids[i], values[i]);
        super._update(from, to, ids, values);
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
