// SPDX-License-Identifier: MIT
// A managed ERC-721 (docs/platform/tokenization.md "Contracts and roles"): OpenZeppelin's ERC721 with burn,
// operator transfers through the standard approvals, every movement checked by TokenControls, each mint
// counted as 1 against the minter's policy.
pragma solidity 0.8.37;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC721Burnable} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721Burnable.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {TokenControls} from "./TokenControls.sol";

contract ManagedERC721 is ERC721, ERC721Burnable, TokenControls {
    string private _baseTokenURI;

    event BaseURISet(string baseURI);

    constructor(string memory name_, string memory symbol_, string memory baseURI_, address admin, address forwarder)
        ERC721(name_, symbol_)
        TokenControls(admin, forwarder)
    {
        _baseTokenURI = baseURI_;
    }

    /// Mints token `tokenId` to `to` (a contract recipient must accept it): MINTER_ROLE, within the caller's mint policy.
    function mint(address to, uint256 tokenId) external {
        _useMintAllowance(1);
        _safeMint(to, tokenId);
    }

    /// Moves the tokens `tokenIds`, each held by `lost`, to `to`, even while paused or under the treasury
    /// rule; `to` must pass the access list and the registry.
    function recover(address lost, address to, uint256[] calldata tokenIds) external onlyRole(RECOVERY_ROLE) {
        uint256[] memory amounts = new uint256[](tokenIds.length);
        for (uint256 i; i < tokenIds.length; ++i) amounts[i] = 1;
        _recover(lost, to, tokenIds, amounts, _moveTokens);
    }

    /// Sets the prefix of every token's URI.
    function setBaseURI(string calldata baseURI_) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _baseTokenURI = baseURI_;
        emit BaseURISet(baseURI_);
    }

    function supportsInterface(bytes4 interfaceId) public view override(ERC721, AccessControl) returns (bool) {
        return super.supportsInterface(interfaceId);
    }

    function _baseURI() internal view override returns (string memory) {
        return _baseTokenURI;
    }

    function _moveTokens(address lost, address to, uint256[] memory tokenIds, uint256[] memory) private {
        for (uint256 i; i < tokenIds.length; ++i) _safeTransfer(lost, to, tokenIds[i]);
    }

    function _update(address to, uint256 tokenId, address auth) internal override returns (address) {
        _checkMove(_ownerOf(tokenId), to, tokenId, 1);
        return super._update(to, tokenId, auth);
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
