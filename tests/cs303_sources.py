"""Source text the CS303 tests write into student-style player files: a plain-Python move
finder, as the course's files have one (no imports from this project: the files run alone)."""

LEGAL_MOVES = '''\
DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def legal_moves(board, color):
    out = []
    for r in range(8):
        for c in range(8):
            if board[r][c] != 0:
                continue
            for dr, dc in DIRS:
                rr, cc, seen = r + dr, c + dc, False
                while 0 <= rr < 8 and 0 <= cc < 8 and board[rr][cc] == -color:
                    rr, cc, seen = rr + dr, cc + dc, True
                if seen and 0 <= rr < 8 and 0 <= cc < 8 and board[rr][cc] == color:
                    out.append((r, c))
                    break
    return out


'''
