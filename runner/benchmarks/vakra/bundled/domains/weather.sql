-- A small network of weather stations (invented data, written for this project). Built into an
-- in-memory SQLite database each time the bundled MCP server starts.
CREATE TABLE stations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    city TEXT NOT NULL,
    elevation_m INTEGER NOT NULL
);
CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    station_id INTEGER NOT NULL REFERENCES stations(id),
    day TEXT NOT NULL,
    temp_c REAL NOT NULL,
    rain_mm REAL NOT NULL
);

INSERT INTO stations VALUES
    (1, 'Harbor Point', 'Eastbrook', 12),
    (2, 'Mill Ridge', 'Eastbrook', 640),
    (3, 'Cedar Flats', 'Norholm', 85),
    (4, 'Signal Hill', 'Norholm', 515),
    (5, 'Lake Verna', 'Castellan', 230),
    (6, 'High Tarn', 'Castellan', 1120);

INSERT INTO readings VALUES
    (1, 1, '2024-03-04', 11.5, 12.0),
    (2, 1, '2024-03-18', 14.0, 8.4),
    (3, 1, '2024-04-02', 19.5, 0.0),
    (4, 1, '2024-04-20', 24.5, 3.1),
    (5, 2, '2024-03-04', 6.0, 16.8),
    (6, 2, '2024-03-18', 8.5, 0.0),
    (7, 2, '2024-04-02', 13.0, 5.5),
    (8, 2, '2024-04-20', 17.5, 9.2),
    (9, 3, '2024-03-04', 12.5, 4.0),
    (10, 3, '2024-03-18', 15.0, 0.0),
    (11, 3, '2024-04-02', 21.0, 2.2),
    (12, 3, '2024-04-20', 22.5, 0.0),
    (13, 4, '2024-03-04', 7.5, 6.3),
    (14, 4, '2024-03-18', 9.0, 11.1),
    (15, 4, '2024-04-02', 14.5, 0.0),
    (16, 4, '2024-04-20', 18.0, 1.4),
    (17, 5, '2024-03-04', 10.0, 2.5),
    (18, 5, '2024-03-18', 13.5, 7.7),
    (19, 5, '2024-04-02', 20.5, 0.0),
    (20, 5, '2024-04-20', 23.0, 0.6),
    (21, 6, '2024-03-04', -2.5, 22.0),
    (22, 6, '2024-03-18', 1.0, 14.3),
    (23, 6, '2024-04-02', 4.5, 9.9),
    (24, 6, '2024-04-20', 8.0, 3.8);
