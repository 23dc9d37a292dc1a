"""A tiny UCT Monte-Carlo tree search with random rollouts, in pure Python.

It is deliberately plain: the demo line-profiles it, and its hot lines (selection, rollout)
should show up at the top of the table.
"""

from __future__ import annotations

import math
import random

from game import Board


class Node:
    __slots__ = ("move", "parent", "children", "untried", "visits", "value", "player")

    def __init__(self, board: Board, move: int | None = None, parent: "Node | None" = None) -> None:
        self.move = move
        self.parent = parent
        self.children: list[Node] = []
        self.untried = board.legal_moves()
        self.visits = 0
        self.value = 0.0
        self.player = -board.to_move  # the player who made `move`

    def select_child(self, exploration: float) -> "Node":
        log_visits = math.log(self.visits)
        best, best_score = None, -1e9
        for child in self.children:
            score = child.value / child.visits + exploration * math.sqrt(log_visits / child.visits)
            if score > best_score:
                best, best_score = child, score
        assert best is not None
        return best


def rollout(board: Board, rng: random.Random) -> int:
    result = board.winner()
    while result is None:
        board.play(rng.choice(board.legal_moves()))
        result = board.winner()
    return result


def search(root_board: Board, simulations: int, rng: random.Random, exploration: float = 1.4) -> list[int]:
    """Visit counts per position 0..8 after `simulations` playouts from `root_board`."""
    root = Node(root_board)
    for _ in range(simulations):
        node, board = root, root_board.copy()
        while not node.untried and node.children:
            node = node.select_child(exploration)
            board.play(node.move)
        if node.untried:
            move = node.untried.pop(rng.randrange(len(node.untried)))
            board.play(move)
            child = Node(board, move, node)
            node.children.append(child)
            node = child
        result = rollout(board, rng)
        while node is not None:
            node.visits += 1
            if result == node.player:
                node.value += 1.0
            elif result == 0:
                node.value += 0.5
            node = node.parent
    visits = [0] * 9
    for child in root.children:
        visits[child.move] = child.visits
    return visits
