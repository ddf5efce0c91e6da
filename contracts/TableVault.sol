// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";

/// @title The table vault: holds the chip token for every table, one recorded balance per table,
/// keyed by keccak256(tableId) (the bank computes the key at the call; it is never stored off chain).
/// @notice Only an operator (the chain bank's key) moves money: a deposit by the player's permit, a
/// withdrawal (stand-up, forced) or a tournament payout to a destination. A table's balance never goes
/// below zero, so the vault never pays out more than was deposited for that table.
contract TableVault is AccessControl {
    using SafeERC20 for IERC20;

    bytes32 public constant OPERATOR_ROLE = keccak256("OPERATOR_ROLE");

    IERC20 public immutable token;

    mapping(bytes32 tableKey => uint256) public tableBalance;
    mapping(bytes32 tableKey => bool) public registered;

    event TableRegistered(bytes32 indexed tableKey);
    event Deposited(bytes32 indexed tableKey, address indexed owner, uint256 amount);
    event Withdrawn(bytes32 indexed tableKey, address indexed to, uint256 amount);
    event PaidOut(bytes32 indexed tableKey, address indexed to, uint256 amount);

    error ZeroAmount();
    error ZeroAddress();
    error InsufficientTableBalance(bytes32 tableKey, uint256 balance, uint256 requested);

    constructor(IERC20 token_, address admin, address operator) {
        if (address(token_) == address(0) || admin == address(0) || operator == address(0)) revert ZeroAddress();
        token = token_;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(OPERATOR_ROLE, operator);
    }

    /// Registers the table on its first deposit, then moves `amount` from `owner` into the vault by
    /// the owner's ERC-2612 permit (spender: this vault) and credits the table.
    /// The permit is tried, not required: anyone may submit a signed permit to the token first (a
    /// front-run), which consumes its nonce and makes our permit call revert. When that happened the
    /// allowance already suffices and the deposit proceeds; otherwise the permit's own revert
    /// (expired, invalid signer) is re-raised so the bank can name it.
    function registerAndDeposit(
        bytes32 tableKey,
        address owner,
        uint256 amount,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external onlyRole(OPERATOR_ROLE) {
        if (amount == 0) revert ZeroAmount();
        if (owner == address(0)) revert ZeroAddress();
        try IERC20Permit(address(token)).permit(owner, address(this), amount, deadline, v, r, s) {}
        catch (bytes memory permitRevert) {
            if (token.allowance(owner, address(this)) < amount) {
                assembly ("memory-safe") {
                    revert(add(permitRevert, 0x20), mload(permitRevert))
                }
            }
        }
        if (!registered[tableKey]) {
            registered[tableKey] = true;
            emit TableRegistered(tableKey);
        }
        token.safeTransferFrom(owner, address(this), amount);
        tableBalance[tableKey] += amount;
        emit Deposited(tableKey, owner, amount);
    }

    /// A player's withdrawal from the table's balance (voluntary stand-up or forced).
    function withdraw(bytes32 tableKey, address to, uint256 amount) external onlyRole(OPERATOR_ROLE) {
        _debit(tableKey, to, amount);
        emit Withdrawn(tableKey, to, amount);
    }

    /// A tournament prize from the table's balance (the entry fees paid in).
    function payout(bytes32 tableKey, address to, uint256 amount) external onlyRole(OPERATOR_ROLE) {
        _debit(tableKey, to, amount);
        emit PaidOut(tableKey, to, amount);
    }

    function _debit(bytes32 tableKey, address to, uint256 amount) private {
        if (amount == 0) revert ZeroAmount();
        if (to == address(0)) revert ZeroAddress();
        uint256 balance = tableBalance[tableKey];
        if (balance < amount) revert InsufficientTableBalance(tableKey, balance, amount);
        tableBalance[tableKey] = balance - amount;
        token.safeTransfer(to, amount);
    }
}
