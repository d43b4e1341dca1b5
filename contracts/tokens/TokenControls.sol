// SPDX-License-Identifier: MIT
// What the three managed tokens (ManagedERC20, ManagedERC721, ManagedERC1155) share: roles, pause, an
// allow/deny access list, the external access-registry hook, the treasury switch, deprecation towards a
// successor, per-minter mint policies, forced recovery and ERC-2771 meta-transactions. Every movement of
// tokens passes `_checkMove` once per token id; the rules are in docs/platform/tokenization.md
// "Contracts and roles".
pragma solidity 0.8.37;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {IAccessRegistry} from "./IAccessRegistry.sol";

abstract contract TokenControls is AccessControl, Pausable, ERC2771Context {
    /// May mint, within its mint policy (a minter without a policy mints nothing).
    bytes32 public constant MINTER_ROLE = keccak256("MINTER_ROLE");
    /// May pause and unpause every movement but recovery.
    bytes32 public constant PAUSER_ROLE = keccak256("PAUSER_ROLE");
    /// May set an account's access-list status and switch allowlist-only mode.
    bytes32 public constant ACCESS_LIST_ROLE = keccak256("ACCESS_LIST_ROLE");
    /// May move everything a lost address holds to a new address.
    bytes32 public constant RECOVERY_ROLE = keccak256("RECOVERY_ROLE");

    /// An account's place on the access list: None (unlisted), Allowed, Denied.
    enum Access {
        None,
        Allowed,
        Denied
    }

    struct MintPolicy {
        uint256 cap; // most a minter mints in one period
        uint64 period; // seconds; periods are aligned to multiples of it since the Unix epoch
        uint64 window; // block.timestamp / period when `minted` was last counted
        uint256 minted; // minted in period `window`
    }

    IAccessRegistry private _registry;
    address private _treasury;
    bool private _treasuryEnabled;
    bool private _allowlistOnly;
    address private _successor;
    mapping(address account => Access) private _access;
    mapping(address minter => MintPolicy) private _mintPolicies;
    // Set only for the duration of a recovery, which passes pause, the treasury rule and the sender's listing.
    bool private transient _recovering;

    event AccessSet(address indexed account, Access status);
    event AllowlistOnlySet(bool enabled);
    event AccessRegistrySet(address indexed previous, address indexed current);
    event TreasuryEnabled(address indexed treasury);
    event TreasuryDisabled();
    event MintPolicySet(address indexed minter, uint256 cap, uint64 period);
    event MintPolicyRemoved(address indexed minter);
    event Deprecated(address indexed successor);
    /// One event shape for the three kinds: an ERC-20 recovery names id 0.
    event Recovered(address indexed lost, address indexed to, address indexed operator, uint256[] ids, uint256[] amounts);

    error InvalidAddress(address account);
    error AccountDenied(address account);
    error AccountNotAllowed(address account);
    error AccessRegistryRefused(address operator, address from, address to, uint256 id, uint256 amount);
    error TreasuryOnly(address from, address to);
    error TokenDeprecated(address successor);
    error InvalidMintPolicy(address minter, uint256 cap, uint64 period);
    error NoMintPolicy(address minter);
    error MintCapExceeded(address minter, uint256 requested, uint256 remaining);
    error NothingToRecover(address lost);

    /// `admin` (a Safe) receives DEFAULT_ADMIN_ROLE, PAUSER_ROLE, ACCESS_LIST_ROLE and RECOVERY_ROLE; MINTER_ROLE
    /// is always granted later, with a mint policy. `forwarder` is the trusted ERC-2771 forwarder (zero: none).
    constructor(address admin, address forwarder) ERC2771Context(forwarder) {
        if (admin == address(0)) revert InvalidAddress(admin);
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(PAUSER_ROLE, admin);
        _grantRole(ACCESS_LIST_ROLE, admin);
        _grantRole(RECOVERY_ROLE, admin);
    }

    // ---- admin ----

    /// Stops every movement except recovery.
    function pause() external onlyRole(PAUSER_ROLE) {
        _pause();
    }

    /// Lets movements resume.
    function unpause() external onlyRole(PAUSER_ROLE) {
        _unpause();
    }

    /// Puts each of `accounts` on the access list as `status` (None removes it).
    function setAccess(address[] calldata accounts, Access status) external onlyRole(ACCESS_LIST_ROLE) {
        for (uint256 i; i < accounts.length; ++i) {
            _access[accounts[i]] = status;
            emit AccessSet(accounts[i], status);
        }
    }

    /// When on, every holder that sends or receives must be Allowed; Denied accounts are refused either way.
    function setAllowlistOnly(bool enabled) external onlyRole(ACCESS_LIST_ROLE) {
        _allowlistOnly = enabled;
        emit AllowlistOnlySet(enabled);
    }

    /// Consults `registry` before every movement from now on; the zero address disables the hook.
    function setAccessRegistry(address registry) external onlyRole(DEFAULT_ADMIN_ROLE) {
        emit AccessRegistrySet(address(_registry), registry);
        _registry = IAccessRegistry(registry);
    }

    /// From now on one side of every movement must be `treasury_`: transfers to or from it, mints to it, burns from it.
    function enableTreasury(address treasury_) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (treasury_ == address(0)) revert InvalidAddress(treasury_);
        _treasury = treasury_;
        _treasuryEnabled = true;
        emit TreasuryEnabled(treasury_);
    }

    /// Lifts the treasury rule.
    function disableTreasury() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _treasuryEnabled = false;
        emit TreasuryDisabled();
    }

    /// Lets `minter` mint at most `cap` per `period` seconds; counting starts afresh.
    function setMintPolicy(address minter, uint256 cap, uint64 period) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (minter == address(0) || period == 0) revert InvalidMintPolicy(minter, cap, period);
        _mintPolicies[minter] = MintPolicy(cap, period, uint64(block.timestamp / period), 0);
        emit MintPolicySet(minter, cap, period);
    }

    /// Removes `minter`'s policy: it mints nothing until given another.
    function removeMintPolicy(address minter) external onlyRole(DEFAULT_ADMIN_ROLE) {
        delete _mintPolicies[minter];
        emit MintPolicyRemoved(minter);
    }

    /// Ends this token for good: no movement of any kind from now on, and `successor()` names its successor.
    function deprecate(address successor_) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (_successor != address(0)) revert TokenDeprecated(_successor);
        if (successor_ == address(0) || successor_ == address(this)) revert InvalidAddress(successor_);
        _successor = successor_;
        emit Deprecated(successor_);
    }

    // ---- views ----

    /// `account`'s access-list status.
    function accessOf(address account) external view returns (Access) {
        return _access[account];
    }

    /// Whether allowlist-only mode is on.
    function allowlistOnly() external view returns (bool) {
        return _allowlistOnly;
    }

    /// The access registry consulted on every movement (zero: none).
    function accessRegistry() external view returns (address) {
        return address(_registry);
    }

    /// The treasury address and whether the treasury rule is on.
    function treasuryStatus() external view returns (address treasury, bool enabled) {
        return (_treasury, _treasuryEnabled);
    }

    /// The successor this token was deprecated in favour of (zero: not deprecated).
    function successor() external view returns (address) {
        return _successor;
    }

    /// `minter`'s policy, what it minted in the current period and what it may still mint in it.
    function mintPolicy(address minter) external view returns (uint256 cap, uint64 period, uint256 minted, uint256 remaining) {
        MintPolicy memory p = _mintPolicies[minter];
        if (p.period == 0) return (0, 0, 0, 0);
        minted = p.window == block.timestamp / p.period ? p.minted : 0;
        return (p.cap, p.period, minted, p.cap - minted);
    }

    // ---- for the token kinds ----

    /// Counts `amount` against the caller's mint policy; the caller must hold MINTER_ROLE.
    function _useMintAllowance(uint256 amount) internal {
        address minter = _msgSender();
        _checkRole(MINTER_ROLE, minter);
        MintPolicy storage p = _mintPolicies[minter];
        if (p.period == 0) revert NoMintPolicy(minter);
        uint64 window = uint64(block.timestamp / p.period);
        if (p.window != window) {
            p.window = window;
            p.minted = 0;
        }
        uint256 remaining = p.cap - p.minted;
        if (amount > remaining) revert MintCapExceeded(minter, amount, remaining);
        p.minted += amount;
    }

    /// The rules every movement of `amount` of token `id` passes (see the file header).
    function _checkMove(address from, address to, uint256 id, uint256 amount) internal {
        if (_successor != address(0)) revert TokenDeprecated(_successor);
        address operator = _msgSender();
        if (!_recovering) {
            _requireNotPaused();
            if (_treasuryEnabled && from != _treasury && to != _treasury) revert TreasuryOnly(from, to);
            if (from != address(0)) _checkListed(from);
            if (operator != from && _access[operator] == Access.Denied) revert AccountDenied(operator);
        }
        if (to != address(0)) _checkListed(to);
        IAccessRegistry registry = _registry;
        if (address(registry) != address(0) && registry.checkTransfer(operator, from, to, id, amount) != IAccessRegistry.checkTransfer.selector) {
            revert AccessRegistryRefused(operator, from, to, id, amount);
        }
    }

    function _checkListed(address account) private view {
        Access a = _access[account];
        if (a == Access.Denied) revert AccountDenied(account);
        if (_allowlistOnly && a != Access.Allowed) revert AccountNotAllowed(account);
    }

    /// Checks a recovery's addresses, then runs `move` with recovery's exemptions and emits Recovered.
    function _recover(address lost, address to, uint256[] memory ids, uint256[] memory amounts, function(address, address, uint256[] memory, uint256[] memory) internal move) internal {
        if (lost == address(0) || lost == to) revert InvalidAddress(lost);
        if (to == address(0)) revert InvalidAddress(to);
        if (ids.length == 0) revert NothingToRecover(lost);
        _recovering = true;
        move(lost, to, ids, amounts);
        _recovering = false;
        emit Recovered(lost, to, _msgSender(), ids, amounts);
    }

    function _msgSender() internal view virtual override(Context, ERC2771Context) returns (address) {
        return ERC2771Context._msgSender();
    }

    function _msgData() internal view virtual override(Context, ERC2771Context) returns (bytes calldata) {
        return ERC2771Context._msgData();
    }

    function _contextSuffixLength() internal view virtual override(Context, ERC2771Context) returns (uint256) {
        return ERC2771Context._contextSuffixLength();
    }
}
