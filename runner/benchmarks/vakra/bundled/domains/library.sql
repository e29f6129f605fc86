-- A small lending library (invented data, written for this project). Built into an in-memory SQLite
-- database each time the bundled MCP server starts.
CREATE TABLE authors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    birth_year INTEGER NOT NULL
);
CREATE TABLE books (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES authors(id),
    genre TEXT NOT NULL,
    year INTEGER NOT NULL,
    pages INTEGER NOT NULL
);
CREATE TABLE loans (
    id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES books(id),
    member TEXT NOT NULL,
    loan_date TEXT NOT NULL,
    returned INTEGER NOT NULL
);

INSERT INTO authors VALUES
    (1, 'Mara Ellison', 'Canada', 1961),
    (2, 'Tomasz Wielgosz', 'Poland', 1948),
    (3, 'Aiko Tanabe', 'Japan', 1975),
    (4, 'Rui Carvalho', 'Portugal', 1969),
    (5, 'Nadia Okafor', 'Nigeria', 1982),
    (6, 'Henrik Lund', 'Denmark', 1955),
    (7, 'Selma Brandt', 'Germany', 1990),
    (8, 'Diego Ferraz', 'Brazil', 1971);

INSERT INTO books VALUES
    (1, 'The Salt Archive', 1, 'mystery', 2004, 312),
    (2, 'Winter Ledger', 1, 'mystery', 2011, 288),
    (3, 'Orbit of Small Things', 3, 'science fiction', 2016, 402),
    (4, 'Paper Lanterns', 3, 'poetry', 2009, 96),
    (5, 'The Copper Road', 2, 'history', 1987, 530),
    (6, 'A Census of Rivers', 2, 'history', 1995, 448),
    (7, 'Quiet Harbour', 6, 'mystery', 1999, 256),
    (8, 'Glass Meridian', 5, 'science fiction', 2019, 376),
    (9, 'Songs for the Dry Season', 5, 'poetry', 2014, 88),
    (10, 'The Cartographer''s Daughter', 4, 'fantasy', 2002, 480),
    (11, 'Iron Bloom', 4, 'fantasy', 2008, 512),
    (12, 'Night Ferry to Aarhus', 6, 'mystery', 2017, 300),
    (13, 'Lattice', 7, 'science fiction', 2021, 344),
    (14, 'Amber Tide', 8, 'fantasy', 2012, 424),
    (15, 'The Last Almanac', 8, 'history', 2018, 360),
    (16, 'Cinder Choir', 7, 'poetry', 2022, 72);

INSERT INTO loans VALUES
    (1, 1, 'J. Okonkwo', '2024-01-05', 1),
    (2, 3, 'J. Okonkwo', '2024-01-19', 1),
    (3, 8, 'J. Okonkwo', '2024-02-02', 0),
    (4, 2, 'L. Moreau', '2024-01-07', 1),
    (5, 5, 'L. Moreau', '2024-02-11', 1),
    (6, 6, 'L. Moreau', '2024-03-01', 0),
    (7, 11, 'P. Sandoval', '2024-01-22', 1),
    (8, 14, 'P. Sandoval', '2024-02-14', 1),
    (9, 10, 'P. Sandoval', '2024-03-03', 1),
    (10, 13, 'P. Sandoval', '2024-03-20', 0),
    (11, 4, 'R. Haddad', '2024-02-08', 1),
    (12, 9, 'R. Haddad', '2024-02-28', 0),
    (13, 7, 'K. Varga', '2024-03-12', 1),
    (14, 12, 'K. Varga', '2024-03-15', 0);
